package kube

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// ToUnstructured converts a typed object into the form server-side apply sends, dropping the
// empty status and creationTimestamp a typed object always carries.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	// A JSON round trip, not runtime.DefaultUnstructuredConverter: the converter's reflection
	// cache costs ~2.2 MB and several ms on first use, which is most of an offline
	// `ain render`'s own work (issue 16); encoding/json's cache is shared with the output step.
	// utiljson.Unmarshal turns integral numbers into int64, as the converter does, so the
	// map holds the same JSON-compatible types.
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	pruneNullTimestamps(u.Object)
	return u, nil
}

// pruneNullTimestamps removes "creationTimestamp: null" left in embedded pod templates.
func pruneNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, c := range t {
			pruneNullTimestamps(c)
		}
	case []any:
		for _, c := range t {
			pruneNullTimestamps(c)
		}
	}
}

// Encode prints objects as YAML (documents separated by ---) or JSON (one object, or a v1 List).
// The output is deterministic: map keys are sorted.
func Encode(objs []runtime.Object, format string) ([]byte, error) {
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		us = append(us, u)
	}
	switch format {
	case "yaml", "":
		var buf bytes.Buffer
		for i, u := range us {
			if i > 0 {
				buf.WriteString("---\n")
			}
			b, err := yaml.Marshal(u.Object)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		}
		return buf.Bytes(), nil
	case "json":
		var v any
		if len(us) == 1 {
			v = us[0].Object
		} else {
			items := make([]any, len(us))
			for i, u := range us {
				items[i] = u.Object
			}
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	}
	return nil, fmt.Errorf("unknown output format %q: use yaml or json", format)
}
