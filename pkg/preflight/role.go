package preflight

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RoleName is the name of the Role `ain preflight --print-role` prints.
const RoleName = "ain-user"

// RoleRules are the permissions ain's commands use in one namespace: train, bench, serve,
// status, logs, delete, release and the preflight's probe pods. Server-side apply is a PATCH,
// so every kind ain applies needs patch besides create (a Role with only create, which a
// namespace admin might hand out, fails the first apply). Nothing here is cluster-wide; what is
// (listing nodes, for preflight's node checks and for explaining Pending pods) is optional and
// degrades to a WARN naming the missing verb (see accesses and NodeReadRules).
var RoleRules = []rbacv1.PolicyRule{
	// The training jobs (ain train, ain bench allreduce), whichever job API the cluster serves:
	// the training-operator's PyTorchJob and MPIJob (kubeflow.org/v1), the mpi-operator's
	// MPIJob (kubeflow.org/v2beta1, same resource name), the Trainer's TrainJob and the
	// TrainingRuntime ain creates with it (trainer.kubeflow.org).
	{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs", "mpijobs"},
		Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{"trainer.kubeflow.org"}, Resources: []string{"trainjobs", "trainingruntimes"},
		Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	// Ranks and probe pods: watched, their logs read; probe pods created and deleted; ain delete
	// deletes a job's pods with it, the preflight its probe pods in one deletecollection; ain serve
	// reaches a replica through a port-forward.
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete", "deletecollection"}},
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create"}},
	// What the jobs and model servers are made of (Services, ConfigMaps, the Secrets of API
	// keys, HF tokens and TLS certificates), and the model servers themselves.
	{APIGroups: []string{""}, Resources: []string{"services", "configmaps", "secrets"},
		Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	// A model server's Gateway API entry: its HTTPRoute, and the Gateway ain creates for it
	// (spec.gateway.className); a shared Gateway in this namespace is only read (its address).
	{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes", "gateways"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	// A multi-replica model server's PodDisruptionBudget; the claims of its model volume are
	// read (access modes) before it is applied.
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}},
	// Explaining Pending pods (FailedScheduling, FailedMount...).
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
}

// NodeReadRules are the cluster-wide reads that make ain's answers better but that a
// namespaced user may lack: without them preflight WARNs and Pending pods are explained from
// events alone. Besides nodes: the job controllers' leader Leases and Deployments, by name only
// (a Deployment's spec may carry values a student should not read), so the preflight can say
// whether the training-operator, mpi-operator or Trainer runs (operator.go); and the
// GatewayClasses and IngressClasses ain serve's entry is chosen and checked against.
var NodeReadRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}, ResourceNames: controllerNames(func(c controller) string { return c.lease })},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}, ResourceNames: controllerNames(func(c controller) string { return c.deployment })},
	// ain serve's entry: which GatewayClass is accepted (--expose auto, or gateway with no
	// class named) and which controller an IngressClass belongs to (its streaming annotations
	// are ingress-nginx's). Without them ain says it could not tell.
	{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gatewayclasses"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingressclasses"}, Verbs: []string{"get"}},
}

// controllerNames lists one name of every known job controller.
func controllerNames(name func(controller) string) []string {
	var out []string
	for _, c := range []controller{ctlTrainingOperator, ctlMPIOperator, ctlTrainer, ctlJobSet} {
		out = append(out, name(c))
	}
	return out
}

// Subject parses "User:NAME", "Group:NAME" or "ServiceAccount:NAME" (in namespace ns).
func Subject(s, ns string) (rbacv1.Subject, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return rbacv1.Subject{}, fmt.Errorf("%q: write User:NAME, Group:NAME or ServiceAccount:NAME", s)
	}
	switch strings.ToLower(kind) {
	case "user":
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}, nil
	case "group":
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}, nil
	case "serviceaccount", "sa":
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}, nil
	}
	return rbacv1.Subject{}, fmt.Errorf("%q: the kind is User, Group or ServiceAccount, not %s", s, kind)
}

// Role returns the Role ain needs in namespace ns and a RoleBinding granting it to subject.
func Role(ns string, subject rbacv1.Subject) (*rbacv1.Role, *rbacv1.RoleBinding) {
	labels := map[string]string{"app.kubernetes.io/name": "ain"}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns, Labels: labels},
	}
	// A copy: a caller that edits the Role it got must not change RoleRules, which the
	// permission checks read.
	for _, r := range RoleRules {
		role.Rules = append(role.Rules, *r.DeepCopy())
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
		Subjects:   []rbacv1.Subject{subject},
	}
	return role, binding
}

// allows reports whether rules grant verb on group/resource[/sub].
func allows(rules []rbacv1.PolicyRule, verb, group, resource, sub string) bool {
	if sub != "" {
		resource += "/" + sub
	}
	has := func(list []string, v string) bool {
		for _, x := range list {
			if x == v || x == "*" {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		if has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) {
			return true
		}
	}
	return false
}

// NodeReadRole returns the optional ClusterRole with NodeReadRules and its binding to subject.
func NodeReadRole(subject rbacv1.Subject) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	const name = "ain-node-read"
	labels := map[string]string{"app.kubernetes.io/name": "ain"}
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules:      NodeReadRules,
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + strings.ToLower(subject.Kind) + "-" + subject.Name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	return role, binding
}

// RoleObjects are the Role ain needs in namespace ns ("": default) and its binding to subject
// (Subject's syntax), then, with nodeRead, the optional ClusterRole to read nodes and its binding.
func RoleObjects(ns, subject string, nodeRead bool) ([]runtime.Object, error) {
	if ns == "" {
		ns = "default"
	}
	subj, err := Subject(subject, ns)
	if err != nil {
		return nil, err
	}
	role, binding := Role(ns, subj)
	objs := []runtime.Object{role, binding}
	if nodeRead {
		cr, crb := NodeReadRole(subj)
		objs = append(objs, cr, crb)
	}
	return objs, nil
}
