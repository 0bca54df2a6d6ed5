package vllm

import (
	"errors"
	"strings"
	"testing"

	"github.com/ain-hpc/ain/pkg/recipe"
)

// The entry flags become recipe overrides, each named by its flag: an existing Gateway
// clears the class (and the other way round), a Gateway implies the Gateway API entry, and
// --host lands on the field of the entry the other flags chose.
func TestEntryChoiceApply(t *testing.T) {
	servingSpec := &recipe.Recipe{Serving: &recipe.ServingSpec{Expose: recipe.ExposeAuto, Ingress: &recipe.ServingIngress{}}}
	for _, tc := range []struct {
		e    EntryChoice
		want string
	}{
		{EntryChoice{}, ""},
		{EntryChoice{Host: "llm.example.com"}, "--host llm.example.com: ingress.host=llm.example.com"},
		{EntryChoice{Gateway: "infra/public:https", Host: "h"}, "--gateway infra/public:https: gateway.name=public; --gateway infra/public:https: gateway.namespace=infra; " +
			"--gateway infra/public:https: gateway.sectionName=https; --gateway infra/public:https: gateway.className=; --gateway infra/public:https: expose=gateway; --host h: gateway.host=h"},
		{EntryChoice{Expose: "ingress"}, "--expose ingress: expose=ingress"},
	} {
		var got []string
		r := servingSpec
		err := tc.e.Apply(func(by, field string) {
			got = append(got, by+": "+field)
			if field == "expose=gateway" {
				r = &recipe.Recipe{Serving: &recipe.ServingSpec{Expose: recipe.ExposeGateway}}
			}
		}, func() (*recipe.Recipe, error) { return r, nil })
		if err != nil || strings.Join(got, "; ") != tc.want {
			t.Errorf("%+v: %v\n got %q\nwant %q", tc.e, err, strings.Join(got, "; "), tc.want)
		}
	}
	for e, want := range map[EntryChoice]string{
		{Gateway: "a", GatewayClass: "b"}:      "--gateway a and --gateway-class b: choose one",
		{Gateway: "a/b/c"}:                     "--gateway a/b/c: write [NAMESPACE/]NAME[:LISTENER]",
		{Gateway: "p:"}:                        "--gateway p:: no listener after ':'",
		{Expose: "ingress", GatewayClass: "e"}: "--gateway-class e with --expose ingress",
	} {
		var ce *EntryChoiceError
		if err := e.Apply(func(string, string) {}, func() (*recipe.Recipe, error) { return servingSpec, nil }); !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", e, err, want)
		}
	}
	var ce *EntryChoiceError
	if err := (EntryChoice{Host: "h"}).Apply(func(string, string) {}, func() (*recipe.Recipe, error) { return &recipe.Recipe{}, nil }); !errors.As(err, &ce) || !strings.Contains(err.Error(), "--host h: only serving recipes") {
		t.Errorf("training recipe: %v", err)
	}
	if s := (EntryChoice{GatewayClass: "eg"}).Source(servingSpec.Serving); s != "--gateway-class eg" {
		t.Errorf("source %q", s)
	}
}
