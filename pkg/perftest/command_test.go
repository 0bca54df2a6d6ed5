package perftest

import (
	"strings"
	"testing"
)

func TestCommandArgs(t *testing.T) {
	gid, gpu := 3, 0
	for _, c := range []struct {
		cmd    Command
		server string
		want   string
	}{
		{Command{Test: "ib_write_bw"}, "", "ib_write_bw -q 1 --report_gbits -a -F -p 18515"},
		{Command{Test: "ib_write_bw", Device: "mlx5_2", Port: 1, GIDIndex: &gid, QPs: 4}, "192.168.100.11",
			"ib_write_bw -d mlx5_2 -i 1 -x 3 -q 4 --report_gbits -a -F -p 18515 192.168.100.11"},
		{Command{Test: "ib_read_bw", Size: 65536, Iters: 5000, CUDA: &gpu}, "10.0.0.1",
			"ib_read_bw -q 1 --report_gbits -s 65536 -n 5000 --use_cuda=0 -F -p 18515 10.0.0.1"},
		{Command{Test: "ib_write_lat", Device: "mlx5_0"}, "10.0.0.1", "ib_write_lat -d mlx5_0 -a -F -p 18515 10.0.0.1"},
	} {
		if got := strings.Join(c.cmd.Args(c.server), " "); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	// Server and client get the same options (perftest README: "The SAME OPTIONS must be passed
	// to both server and client"); the client adds the address.
	cmd := Command{Test: "ib_write_bw", Device: "mlx5_0", QPs: 2}
	if s, c := cmd.ServerScript(), cmd.ClientScript("10.0.0.7"); !strings.Contains(c, s+" 10.0.0.7 && exit 0") {
		t.Errorf("client %q does not run the server's options %q", c, s)
	}
}

func TestCommandValidate(t *testing.T) {
	for _, c := range []struct {
		cmd  Command
		want string
	}{
		{Command{Test: "ib_send_bw"}, "one of ib_write_bw"},
		{Command{Test: "ib_write_lat", QPs: 4}, "bandwidth tests"},
		{Command{Test: "ib_write_bw", Iters: 10}, "at least 100"},
		{Command{Test: "ib_write_bw", Device: "mlx5_0; rm -rf /"}, "device"},
		{Command{Test: "ib_write_bw", Size: 2 << 30}, "message size"},
		{Command{Test: "ib_write_lat", CUDA: new(int)}, "read/send verbs only"},
	} {
		err := c.cmd.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cmd, err, c.want)
		}
	}
	if err := (Command{Test: "ib_read_lat", CUDA: new(int)}).Validate(); err == nil || !strings.Contains(err.Error(), "one of") {
		t.Errorf("ib_read_lat: %v", err)
	}
	if err := (Command{Test: "ib_read_bw", CUDA: new(int)}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (Command{Test: "ib_write_bw", QPs: 8}).Validate(); err != nil {
		t.Error(err)
	}
}
