package strict

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Set applies one "path=value" override. Path segments are separated by dots, list elements
// addressed as name[i]; prefix is prepended to paths that do not start with one of roots
// (so "nodes=2" means "spec.nodes=2"). The value is parsed as YAML (so "8", "true", "[a, b]"
// and "{k: v}" keep their types) and is type-checked by Decode like any file value; problems
// in it are reported against "--set path=value".
func (d *Doc) Set(arg, prefix string, roots []string) error {
	return d.SetFrom("--set "+arg, arg, prefix, roots)
}

// SetFrom is Set with problems reported against src: a command flag that sets a field
// (ain serve --host H sets ingress.host) names itself, not a --set the user never typed.
func (d *Doc) SetFrom(src, arg, prefix string, roots []string) error {
	path, value, ok := strings.Cut(arg, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Problems{{Source: src, Msg: "expected path=value, e.g. --set nodes=2 or --set nccl.env.NCCL_ALGO=Ring"}}
	}
	if prefix != "" && !hasRoot(path, roots) {
		path = prefix + "." + path
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(value), &v); err != nil || len(v.Content) == 0 {
		// Not valid YAML on its own (or empty): take it as a plain string.
		v = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}}}
	}
	val := v.Content[0]
	d.markSet(val, src)
	segs, err := splitPath(path)
	if err != nil {
		return Problems{{Source: src, Msg: err.Error()}}
	}
	n := d.content()
	if n == nil {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		d.root = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}
	}
	for i, s := range segs {
		last := i == len(segs)-1
		if s.index >= 0 {
			if n.Kind != yaml.SequenceNode {
				return Problems{{Source: src, Path: s.path, Msg: "is not a list"}}
			}
			if s.index >= len(n.Content) {
				if s.index == len(n.Content) {
					child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
					d.markSet(child, src)
					n.Content = append(n.Content, child)
				} else {
					return Problems{{Source: src, Path: s.path, Msg: fmt.Sprintf("index %d is past the end of the list (%d elements; use [%d] to append)", s.index, len(n.Content), len(n.Content))}}
				}
			}
			if last {
				n.Content[s.index] = val
				return nil
			}
			n = n.Content[s.index]
			continue
		}
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				n.Kind, n.Tag, n.Value = yaml.MappingNode, "!!map", ""
			} else {
				return Problems{{Source: src, Path: s.path, Msg: "cannot set a field inside a value that is not a mapping"}}
			}
		}
		found := -1
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == s.key {
				found = j
				break
			}
		}
		if last {
			if found >= 0 {
				n.Content[found+1] = val
				// Positions are recorded at the key: the file's key now holds the flag's value,
				// so a problem with it must name the flag, not the line the key was on.
				d.markSet(n.Content[found], src)
			} else {
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key}
				d.markSet(k, src)
				n.Content = append(n.Content, k, val)
			}
			return nil
		}
		if found < 0 {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key}
			child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if segs[i+1].index >= 0 {
				child = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			}
			d.markSet(k, src)
			d.markSet(child, src)
			n.Content = append(n.Content, k, child)
			n = child
		} else {
			n = n.Content[found+1]
		}
	}
	return nil
}

// markSet records that n (and what it holds) came from a --set flag, so problems in it name
// the flag rather than a file line.
func (d *Doc) markSet(n *yaml.Node, src string) {
	if d.setBy == nil {
		d.setBy = map[*yaml.Node]string{}
	}
	d.setBy[n] = src
	for _, c := range n.Content {
		d.markSet(c, src)
	}
}

func hasRoot(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[") {
			return true
		}
	}
	return false
}

type seg struct {
	key   string
	index int // -1 for a key
	path  string
}

func splitPath(path string) ([]seg, error) {
	var out []seg
	cur := ""
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return nil, fmt.Errorf("path %q has an empty segment", path)
		}
		name := part
		var idx []int
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			rest := part[i:]
			for rest != "" {
				if rest[0] != '[' {
					return nil, fmt.Errorf("path %q: bad index syntax", path)
				}
				j := strings.IndexByte(rest, ']')
				if j < 0 {
					return nil, fmt.Errorf("path %q: missing ]", path)
				}
				k, err := strconv.Atoi(rest[1:j])
				if err != nil || k < 0 {
					return nil, fmt.Errorf("path %q: index %q is not a non-negative integer", path, rest[1:j])
				}
				idx = append(idx, k)
				rest = rest[j+1:]
			}
		}
		if name != "" {
			cur = join(cur, name)
			out = append(out, seg{key: name, index: -1, path: cur})
		}
		for _, k := range idx {
			cur = fmt.Sprintf("%s[%d]", cur, k)
			out = append(out, seg{index: k, path: cur})
		}
	}
	return out, nil
}
