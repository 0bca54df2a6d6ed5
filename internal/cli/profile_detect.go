package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ain-hpc/ain/pkg/ainerr"
	"github.com/ain-hpc/ain/pkg/preflight"
	"github.com/ain-hpc/ain/pkg/profile"
)

func (a *App) profileDetectCommand() *ucli.Command {
	var out string
	return &ucli.Command{
		Name:  "detect",
		Usage: "build a fabric profile from what the cluster says (node allocatable and labels, NetworkAttachmentDefinitions)",
		Description: "Reads the nodes (GPU and RDMA device-plugin resources from allocatable; GPU product and link layer from labels)\n" +
			"and the Multus NetworkAttachmentDefinitions of all namespaces (CNI type, RDMA resource, IPAM subnet), and prints\n" +
			"a profile file in which every field says where its value came from. What the API cannot tell (HCA names, port\n" +
			"rate, RoCE GID index: they need a probe pod on a GPU node) keeps its default and is listed as not detected;\n" +
			"where the sources disagree (nodes with different resources or link layers) the conflict is listed.\n\n" +
			"Example:\n  ain profile detect > cluster.yaml && ain profile show --profile cluster.yaml",
		Flags: []ucli.Flag{outputFlag(&out, "yaml", "yaml (a profile file with origin comments) or json", "json")},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return ainerr.Usagef("profile detect takes no arguments (got %q); redirect its output to a file", c.Args().First())
			}
			return a.runProfileDetect(c.Context, out)
		},
	}
}

func (a *App) runProfileDetect(ctx context.Context, out string) error {
	kc, err := a.clients()
	if err != nil {
		return err
	}
	a.sandboxNote(kc)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nodes, err := kc.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return kc.Classify(err, "list nodes")
	}
	var nads []profile.NAD
	var nadErr error
	list, err := kc.Dynamic.Resource(preflight.NADResource).Namespace("").List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		nadErr = fmt.Errorf("the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1) is not installed: no Multus")
	case err != nil:
		nadErr = kc.Classify(err, "list NetworkAttachmentDefinitions")
	default:
		for _, it := range list.Items {
			cfg, _, _ := unstructured.NestedString(it.Object, "spec", "config")
			nads = append(nads, profile.NAD{Namespace: it.GetNamespace(), Name: it.GetName(),
				ResourceName: it.GetAnnotations()["k8s.v1.cni.cncf.io/resourceName"], Config: cfg})
		}
	}
	d := profile.Detect(nodes.Items, nads, nadErr)
	if out == "json" {
		return a.writeJSON(d)
	}
	y, err := d.YAML(kc.Server, a.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return err
	}
	_, err = a.Streams.Out.Write(y)
	return err
}
