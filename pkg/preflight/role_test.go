package preflight

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/ain-hpc/ain/pkg/jobs"
)

// The Role printed for users and the permissions the preflight checks are two lists: every
// namespaced permission the preflight asks for must be in the Role, and what the Role leaves
// out (cluster-wide reads) must be optional in the preflight (a WARN, never a FAIL).
func TestRoleCoversPreflightAccesses(t *testing.T) {
	var all []access
	for _, api := range jobs.APIs {
		all = append(all, accesses(Options{API: api})...)
	}
	for _, a := range all {
		switch {
		case a.cluster && !a.optional:
			t.Errorf("%s is cluster-wide but required: a namespaced user could never pass the preflight", a)
		case a.cluster && !allows(NodeReadRules, a.verb, a.group, a.resource, a.sub):
			t.Errorf("%s is not in NodeReadRules (docs/rbac.md)", a)
		case !a.cluster && !allows(RoleRules, a.verb, a.group, a.resource, a.sub):
			t.Errorf("the preflight asks for %s but the Role does not grant it", a)
		}
	}
	// Server-side apply is a PATCH: each kind ain applies needs it.
	for _, r := range []struct{ group, resource string }{
		{"kubeflow.org", "pytorchjobs"}, {"kubeflow.org", "mpijobs"}, {"", "services"}, {"", "configmaps"},
		{"", "secrets"}, {"apps", "deployments"}, {"networking.k8s.io", "ingresses"},
		{"gateway.networking.k8s.io", "httproutes"}, {"gateway.networking.k8s.io", "gateways"},
	} {
		for _, v := range []string{"create", "patch", "get", "delete"} {
			if !allows(RoleRules, v, r.group, r.resource, "") {
				t.Errorf("the Role lacks %s %s.%s", v, r.resource, r.group)
			}
		}
	}
}

func TestSubject(t *testing.T) {
	for in, want := range map[string]string{"User:alice": "User/alice/", "group:students": "Group/students/", "ServiceAccount:ain": "ServiceAccount/ain/team-a", "sa:ci": "ServiceAccount/ci/team-a"} {
		s, err := Subject(in, "team-a")
		if err != nil || s.Kind+"/"+s.Name+"/"+s.Namespace != want {
			t.Errorf("%s: %+v %v", in, s, err)
		}
	}
	for _, bad := range []string{"alice", "User:", "Robot:r2"} {
		if _, err := Subject(bad, "ns"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// The Role is the caller's to edit: changing it leaves RoleRules, which the checks read, alone.
func TestRoleIsACopy(t *testing.T) {
	before := fmt.Sprint(RoleRules)
	role, _ := Role("ns", rbacv1.Subject{Kind: "User", Name: "u"})
	for i := range role.Rules {
		role.Rules[i].Resources[0] = "changed"
		role.Rules[i].Verbs = role.Rules[i].Verbs[:0]
	}
	if fmt.Sprint(RoleRules) != before {
		t.Fatal("editing the returned Role changed RoleRules")
	}
}
