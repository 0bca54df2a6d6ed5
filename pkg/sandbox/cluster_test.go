package sandbox

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A scenario switch writes a node only when its labels or annotations change (kwok replans the
// node's heartbeat on every write), takes away the RDMA labels of a node without RDMA, resets
// ain's own annotations, and keeps what other controllers set.
func TestMergeNodeMeta(t *testing.T) {
	c := Config{Nodes: 2, GPUsPerNode: 8, Fabric: "ib", RDMAResource: "rdma/ib", RDMACount: 1}
	managed := simulatedNode(c, 1, true).Labels
	live := func(rdma bool) *corev1.Node {
		n := simulatedNode(c, 1, rdma)
		n.Labels["topology.kubernetes.io/zone"] = "z1"                                   // someone else's
		n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true" // someone else's
		return n
	}

	cur := live(true)
	if mergeNodeMeta(cur, simulatedNode(c, 1, true), managed) {
		t.Error("an unchanged node would be written")
	}
	// The TTL annotation, ain's at creation only, is the TTL controller's once the node exists
	// (15 s above 100 nodes).
	cur = live(true)
	cur.Annotations[corev1.ObjectTTLAnnotationKey] = "15"
	want := simulatedNode(c, 1, true)
	if mergeNodeMeta(cur, want, managed) || cur.Annotations[corev1.ObjectTTLAnnotationKey] != "15" {
		t.Errorf("the TTL controller's annotation is written over: %v", cur.Annotations)
	}

	cur = live(true)
	if !mergeNodeMeta(cur, simulatedNode(c, 1, false), managed) {
		t.Fatal("RDMA taken away: no change reported")
	}
	if _, ok := cur.Labels["feature.node.kubernetes.io/rdma.available"]; ok {
		t.Error("the RDMA label stays on a node without RDMA")
	}
	if cur.Labels["topology.kubernetes.io/zone"] != "z1" || cur.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("another's label or annotation was dropped: %v %v", cur.Labels, cur.Annotations)
	}

	cur = live(false)
	cur.Annotations[AnnoNodeDown] = "true"
	want = simulatedNode(c, 1, true)
	if !mergeNodeMeta(cur, want, managed) {
		t.Fatal("RDMA back and node-down removed: no change reported")
	}
	if _, ok := cur.Annotations[AnnoNodeDown]; ok {
		t.Error("ain's node-down annotation stays after a scenario change")
	}
	for k, v := range want.Labels {
		if cur.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cur.Labels[k], v)
		}
	}

	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1"}}
	if !mergeNodeMeta(bare, want, managed) || !maps.Equal(bare.Labels, want.Labels) || !maps.Equal(bare.Annotations, want.Annotations) {
		t.Errorf("a node without labels: %v %v", bare.Labels, bare.Annotations)
	}
}

// A node is written only when changed; a conflict reads it again (never writes the empty object
// client-go returns beside the error) and applies the change to what it read.
func TestWriteNodeIfChanged(t *testing.T) {
	ctx := context.Background()
	gets, writes := 0, []string{}
	get := func() (*corev1.Node, error) {
		gets++
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1", ResourceVersion: "2"}}, nil
	}
	write := func(n *corev1.Node) (*corev1.Node, error) {
		writes = append(writes, n.ResourceVersion+"/"+n.Labels["x"])
		if n.ResourceVersion == "1" {
			return &corev1.Node{}, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, n.Name, errors.New("modified"))
		}
		return n, nil
	}
	label := func(n *corev1.Node) bool {
		return mergeNodeMeta(n, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}}}, nil)
	}

	got, err := writeNodeIfChanged(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1", ResourceVersion: "1"}}, label, write, get)
	if err != nil || gets != 1 || !slices.Equal(writes, []string{"1/y", "2/y"}) || got.ResourceVersion != "2" {
		t.Errorf("after a conflict: err %v, %d get(s), writes %v, got %+v", err, gets, writes, got)
	}
	gets, writes = 0, nil
	same := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1", ResourceVersion: "3", Labels: map[string]string{"x": "y"}}}
	if got, err := writeNodeIfChanged(ctx, same, label, write, get); err != nil || gets != 0 || len(writes) != 0 || got != same {
		t.Errorf("unchanged: err %v, %d get(s), writes %v", err, gets, writes)
	}
}
