package recipe

import "testing"

// A path or a name with .yaml names the built-in of its base name; another name, none.
func TestBuiltinRef(t *testing.T) {
	for ref, want := range map[string]bool{"qlora": true, "./recipes/qlora.yaml": true, `C:\r\qlora.yml`: true, "./mine.yaml": false} {
		name, ok := BuiltinRef(ref)
		if ok != want || (ok && name != "qlora") {
			t.Errorf("%s: %q, %v; want %v", ref, name, ok, want)
		}
	}
}
