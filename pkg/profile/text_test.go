package profile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteText(t *testing.T) {
	p := Default()
	p.Spec.Networks = []string{"rdma-net"}
	var b bytes.Buffer
	p.WriteText(&b, TextOptions{NoFile: "DEFAULTS"})
	out := b.String()
	for _, want := range []string{"profile: DEFAULTS\n\n", "spec.rdma.resource", p.Spec.RDMA.Resource,
		"\nNCCL environment for fabric " + p.Spec.Fabric + ":\n",
		", Multus networks rdma-net.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	p.Spec.Fabric = FabricSocket
	b.Reset()
	p.WriteText(&b, TextOptions{})
	if !strings.HasSuffix(b.String(), "\nSocket fabric: no RDMA resource, NCCL_IB_DISABLE=1 (the TCP baseline).\n") {
		t.Errorf("socket fabric:\n%s", b.String())
	}
}

func TestWriteTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ain", "profile.yaml")
	if err := WriteTemplate(path, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != Template {
		t.Error("the file is not the template")
	}
	var exists *ExistsError
	if err := WriteTemplate(path, false); !errors.As(err, &exists) || err.Error() != path+" exists" {
		t.Errorf("second write: %v, want an *ExistsError", err)
	}
	if err := WriteTemplate(path, true); err != nil {
		t.Errorf("--force: %v", err)
	}
}
