// Package strict decodes YAML documents into Go structs strictly: unknown fields (with a
// "did you mean" suggestion), wrong types and duplicate keys are reported with the file, line
// and field path, all of them at once rather than the first only. It also applies --set
// overrides typed against the target struct, and remembers where every value came from so
// later validation can point at the right line.
package strict

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ain-hpc/ain/pkg/lazyre"
)

// Problem is one thing wrong with a document.
type Problem struct {
	Source string // file name, or "--set path=value"
	Line   int    // 1-based; 0 when unknown
	Path   string // field path such as spec.volumes[0].mountPath
	Msg    string
	// Next are the ain commands that help fix it.
	Next []next.Command
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Source)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is a list of problems; as an error it prints one per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// NextCommands returns the commands the problems suggest, each once, in order.
func (ps Problems) NextCommands() []next.Command {
	var out []next.Command
	for _, p := range ps {
		for _, c := range p.Next {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// Counted is ps as one error that counts them ("2 problems:") and lists them indented, one a
// line, suggesting their commands (NextCommands).
func (ps Problems) Counted() error {
	noun := "problem"
	if len(ps) > 1 {
		noun = "problems"
	}
	err := fmt.Errorf("%d %s:\n  %s", len(ps), noun, strings.ReplaceAll(ps.Error(), "\n", "\n  "))
	if cmds := ps.NextCommands(); len(cmds) > 0 {
		return next.With(err, cmds...)
	}
	return err
}

// Err returns nil for an empty list, else the list as an error.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Pos is where a value came from.
type Pos struct {
	Source string
	Line   int
}

// Doc is a parsed YAML document with the position of every field path.
type Doc struct {
	Source string
	root   *yaml.Node
	pos    map[string]Pos
	setBy  map[*yaml.Node]string // nodes made by Set, with the flag that made them
	tags   map[string]string     // field path -> YAML tag of a scalar value (!!str, !!int, ...)
}

// ScalarTag is the YAML tag of the scalar at path (!!str, !!int, !!float, !!bool), empty when
// path is absent or not a scalar. A string field decodes `image: 5` as "5"; the tag tells a
// validator the author wrote a number.
func (d *Doc) ScalarTag(path string) string { return d.tags[path] }

// Parse parses one YAML document. A syntax error is returned as Problems with its line.
func Parse(source string, data []byte) (*Doc, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if err.Error() == "EOF" {
			return nil, Problems{{Source: source, Msg: "the file is empty"}}
		}
		return nil, Problems{syntaxProblem(source, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Problems{{Source: source, Line: extra.Line, Msg: "more than one YAML document (---): put one recipe or profile per file"}}
	}
	d := &Doc{Source: source, root: &root, pos: map[string]Pos{}}
	return d, nil
}

var lineRE = lazyre.New(`^yaml: line (\d+): (.*)$`)

func syntaxProblem(source string, err error) Problem {
	msg := err.Error()
	if m := lineRE().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Problem{Source: source, Line: n, Msg: "invalid YAML: " + m[2]}
	}
	return Problem{Source: source, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// Pos returns where path came from; for a path that is absent, the position of its nearest
// present ancestor, so "missing" problems still point at a useful line.
func (d *Doc) Pos(path string) Pos {
	for p := path; ; {
		if pos, ok := d.pos[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return Pos{Source: d.Source, Line: d.rootLine()}
}

func (d *Doc) rootLine() int {
	if n := d.content(); n != nil {
		return n.Line
	}
	return 0
}

// Problemf builds a problem located at path.
func (d *Doc) Problemf(path, format string, args ...any) Problem {
	pos := d.Pos(path)
	return Problem{Source: pos.Source, Line: pos.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Has reports whether the document (after overrides) sets path.
func (d *Doc) Has(path string) bool {
	_, ok := d.pos[path]
	return ok
}

func (d *Doc) content() *yaml.Node {
	n := d.root
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	return n
}

// Decode checks the document against out's type (a pointer to a struct), collecting every
// problem, then decodes it into out.
func (d *Doc) Decode(out any) Problems {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("strict.Decode: out must be a pointer to a struct")
	}
	n := d.content()
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return Problems{{Source: d.Source, Msg: "the document is empty"}}
	}
	var ps Problems
	// check reports problems and prunes the offending values (unknown fields removed, values of
	// the wrong type nulled) so the rest still decodes and can be validated: the user sees every
	// problem at once.
	d.check(n, rv.Elem().Type(), "", &ps)
	if err := n.Decode(out); err != nil {
		ps = append(ps, Problem{Source: d.Source, Msg: err.Error()})
	}
	return ps
}

func (d *Doc) checkDuplicates(n *yaml.Node, path string, ps *Problems) {
	switch n.Kind {
	case yaml.MappingNode:
		d.eachEntry(n, path, "field", ps, func(_, v *yaml.Node, fp string) bool {
			d.checkDuplicates(v, fp, ps)
			return true
		})
	case yaml.SequenceNode:
		for i, v := range n.Content {
			d.checkDuplicates(v, fmt.Sprintf("%s[%d]", path, i), ps)
		}
	}
}

// nullify turns n into an explicit null so decoding leaves the zero value.
func nullify(n *yaml.Node) {
	n.Kind, n.Tag, n.Value, n.Content, n.Alias = yaml.ScalarNode, "!!null", "", nil, nil
}

func (d *Doc) record(path string, n *yaml.Node) {
	if _, ok := d.pos[path]; ok {
		return
	}
	src := d.Source
	if s, ok := d.setBy[n]; ok {
		src = s
		d.pos[path] = Pos{Source: src}
		return
	}
	d.pos[path] = Pos{Source: src, Line: n.Line}
}

func (d *Doc) problem(ps *Problems, n *yaml.Node, path, format string, args ...any) {
	src, line := d.Source, n.Line
	if s, ok := d.setBy[n]; ok {
		src, line = s, 0
	}
	*ps = append(*ps, Problem{Source: src, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// eachEntry walks mapping n's key/value pairs: a repeated key is a problem ("duplicate what
// %q") and is dropped; visit sees every other pair (fp: its path) and says whether to keep it.
// n then holds only the kept pairs, so the Decode that follows sees each key once.
func (d *Doc) eachEntry(n *yaml.Node, path, what string, ps *Problems, visit func(k, v *yaml.Node, fp string) bool) {
	seen := map[string]bool{}
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		if seen[k.Value] {
			d.problem(ps, k, fp, "duplicate %s %q", what, k.Value)
			continue
		}
		seen[k.Value] = true
		if visit(k, v, fp) {
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
}

// mismatch reports that n is not what its field takes (want: "a list") and nulls n, so the
// Decode that follows leaves the zero value there and goes on to report the rest.
func (d *Doc) mismatch(ps *Problems, n *yaml.Node, path, want string) {
	d.problem(ps, n, path, "expected %s, got %s", want, describe(n))
	nullify(n)
}

// check walks node n against type t.
func (d *Doc) check(n *yaml.Node, t reflect.Type, path string, ps *Problems) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if path != "" {
		d.record(path, n)
		if n.Kind == yaml.ScalarNode {
			if d.tags == nil {
				d.tags = map[string]string{}
			}
			d.tags[path] = n.ShortTag()
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an explicit null leaves the zero value
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.mismatch(ps, n, path, "a mapping (field: value)")
			return
		}
		fields := structFields(t)
		d.eachEntry(n, path, "field", ps, func(k, v *yaml.Node, fp string) bool {
			key := k.Value
			f, ok := fields[key]
			if !ok {
				msg := fmt.Sprintf("unknown field %q", key)
				if s := suggest(key, fieldNames(fields)); s != "" {
					msg += fmt.Sprintf(", did you mean %q?", s)
				} else {
					msg += fmt.Sprintf(" (known fields: %s)", strings.Join(fieldNames(fields), ", "))
				}
				d.problem(ps, k, fp, "%s", msg)
				return false
			}
			d.record(fp, k)
			d.check(v, f, fp, ps)
			return true
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.mismatch(ps, n, path, "a mapping (key: value)")
			return
		}
		d.eachEntry(n, path, "key", ps, func(k, v *yaml.Node, fp string) bool {
			d.record(fp, k)
			d.check(v, t.Elem(), fp, ps)
			return true
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.mismatch(ps, n, path, "a list")
			return
		}
		for i, v := range n.Content {
			d.check(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ps)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.mismatch(ps, n, path, "a string")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.mismatch(ps, n, path, "true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.mismatch(ps, n, path, "an integer")
			return
		}
		var node yaml.Node = *n
		probe := reflect.New(t)
		if err := node.Decode(probe.Interface()); err != nil {
			d.problem(ps, n, path, "integer %s is out of range", n.Value)
			nullify(n)
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			d.mismatch(ps, n, path, "a number")
		}
	case reflect.Interface:
		// Any value is accepted; duplicate keys are still reported (and pruned) here, as a
		// later typed pass over the same nodes will not see them again.
		d.checkDuplicates(n, path, ps)
	default:
		d.problem(ps, n, path, "unsupported field type %s", t)
		nullify(n)
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return strconv.Quote(n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected value"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// structFields maps YAML field names to types, following inline embedded structs.
func structFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range structFields(ft) {
				m[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func fieldNames(m map[string]reflect.Type) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// suggest returns the known name closest to s, if it is close enough to be a likely typo.
func suggest(s string, known []string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, k := range known {
		lk := strings.ToLower(k)
		if lk == ls {
			return k
		}
		d := levenshtein(ls, lk)
		if d < bestD {
			best, bestD = k, d
		}
	}
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	if bestD <= limit {
		return best
	}
	return ""
}

// Suggest is suggest for other packages (e.g. NCCL variable names).
func Suggest(s string, known []string) string { return suggest(s, known) }

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
