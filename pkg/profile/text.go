package profile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ain-hpc/ain/pkg/nccl"
	"github.com/ain-hpc/ain/pkg/textout"
)

// TextOptions shape the profile's text.
type TextOptions struct {
	TTY bool
	// NoFile is the source line of a profile loaded from no file (built-in defaults).
	NoFile string
}

// WriteText writes the effective profile: its source, each field's value and where it came from,
// the NCCL environment of its fabric, and what every GPU pod gets.
func (p *Profile) WriteText(w io.Writer, o TextOptions) {
	src := p.Source
	if src == "" {
		src = o.NoFile
	}
	fmt.Fprintf(w, "profile: %s\n\n", src)
	vals := p.values()
	rows := [][]string{}
	for _, f := range fieldPaths {
		origin := p.Origins[f]
		if origin == "" {
			origin = "unset"
		}
		rows = append(rows, []string{f, vals[f], origin})
	}
	textout.Table(w, o.TTY, []string{"FIELD", "VALUE", "FROM"}, rows)
	env := nccl.FabricEnv(p.NCCLFabric())
	fmt.Fprintf(w, "\nNCCL environment for fabric %s:\n", p.Spec.Fabric)
	for _, k := range nccl.SortedNames(env) {
		fmt.Fprintf(w, "  %s=%s\n", k, env[k])
	}
	if !p.RDMA() {
		fmt.Fprintln(w, "\nSocket fabric: no RDMA resource, NCCL_IB_DISABLE=1 (the TCP baseline).")
		return
	}
	fmt.Fprintf(w, "\nEvery GPU pod also gets: %s: %d (request = limit), IPC_LOCK, a memory-backed /dev/shm", p.Spec.RDMA.Resource, p.Spec.RDMA.Count)
	if len(p.Spec.Networks) > 0 {
		fmt.Fprintf(w, ", Multus networks %s", strings.Join(p.Spec.Networks, ","))
	}
	fmt.Fprintln(w, ".")
}

// WriteYAML writes the profile as YAML.
func (p *Profile) WriteYAML(w io.Writer) error {
	b, err := yaml.Marshal(p)
	return writeBytes(w, b, err)
}

// WriteYAML writes the detected profile (YAML), detected from server at when.
func (d *Detected) WriteYAML(w io.Writer, server string, when time.Time) error {
	b, err := d.YAML(server, when.UTC().Format(time.RFC3339))
	return writeBytes(w, b, err)
}

// writeBytes writes b, what a marshaller returned with err, unless err is not nil.
func writeBytes(w io.Writer, b []byte, err error) error {
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// values are the fields' values as text, by field path.
func (p *Profile) values() map[string]string {
	s := p.Spec
	tc := ""
	if s.TrafficClass != nil {
		tc = fmt.Sprint(*s.TrafficClass)
	}
	sel := []string{}
	for k, v := range s.NodeSelector {
		sel = append(sel, k+"="+v)
	}
	tol := []string{}
	for _, t := range s.Tolerations {
		tol = append(tol, fmt.Sprintf("%s:%s:%s", t.Key, t.Operator, t.Effect))
	}
	return map[string]string{
		"spec.fabric": s.Fabric, "spec.gpuResource": s.GPUResource, "spec.rdma.resource": s.RDMA.Resource,
		"spec.rdma.count": fmt.Sprint(s.RDMA.Count), "spec.networks": strings.Join(s.Networks, ","),
		"spec.hcas": strings.Join(s.HCAs, ","), "spec.gidIndex": s.GIDIndex, "spec.trafficClass": tc,
		"spec.socketIfname": s.SocketIfname, "spec.gdrLevel": s.GDRLevel, "spec.lineRate": s.LineRate,
		"spec.nodeSelector": strings.Join(sel, ","), "spec.tolerations": strings.Join(tol, ","),
	}
}

// ExistsError is a file WriteTemplate would overwrite.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string { return e.Path + " exists" }

// WriteTemplate writes Template to path (making its folder), unless a file is there and force is
// false (an *ExistsError).
func WriteTemplate(path string, force bool) error {
	if _, err := os.Stat(path); err == nil && !force {
		return &ExistsError{Path: path}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(Template), 0o644)
}
