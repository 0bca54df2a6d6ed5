package recipe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ain-hpc/ain/pkg/next"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ain-hpc/ain/pkg/input"
	"github.com/ain-hpc/ain/pkg/strict"
	"github.com/ain-hpc/ain/recipes"
)

// setRoots are the top-level fields a --set path may start with; any other path is taken as
// relative to spec ("nodes=2" means "spec.nodes=2").
var setRoots = []string{"apiVersion", "kind", "metadata", "spec"}

// envelope types give the strict decoder the schema of each kind.
type header struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       any      `yaml:"spec"`
}

type trainingDoc struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   Metadata     `yaml:"metadata"`
	Spec       TrainingSpec `yaml:"spec"`
}

type mpiDoc struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Spec       MPISpec  `yaml:"spec"`
}

type servingDoc struct {
	APIVersion string      `yaml:"apiVersion"`
	Kind       string      `yaml:"kind"`
	Metadata   Metadata    `yaml:"metadata"`
	Spec       ServingSpec `yaml:"spec"`
}

// Parse decodes a recipe from data (named source in messages), applies --set overrides,
// defaults and validation. The error, if any, is strict.Problems listing every problem.
func Parse(source string, data []byte, sets []string) (*Recipe, error) {
	return ParseOverrides(source, data, SetOverrides(sets))
}

// Override is one field override, PATH=VALUE as --set takes it, and the flag it came from
// ("--set nodes=2", or "--host h" for a command flag that sets spec.ingress.host), which
// problems in it name.
type Override struct{ Set, Flag string }

// SetOverrides are --set flags as overrides.
func SetOverrides(sets []string) []Override {
	out := make([]Override, len(sets))
	for i, s := range sets {
		out[i] = Override{Set: s, Flag: "--set " + s}
	}
	return out
}

// ParseOverrides is Parse with overrides that name their flags; later ones win.
func ParseOverrides(source string, data []byte, ovs []Override) (*Recipe, error) {
	doc, err := strict.Parse(source, data)
	if err != nil {
		return nil, err
	}
	var ps strict.Problems
	for _, o := range ovs {
		if err := doc.SetFrom(o.Flag, o.Set, "spec", setRoots); err != nil {
			var sp strict.Problems
			if errors.As(err, &sp) {
				ps = append(ps, sp...)
			} else {
				ps = append(ps, strict.Problem{Source: o.Flag, Msg: err.Error()})
			}
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	r := &Recipe{Source: source, Raw: data, doc: doc}
	var h header
	ps = append(ps, doc.Decode(&h)...)
	switch h.Kind {
	case KindTraining:
		var d trainingDoc
		ps = append(ps, doc.Decode(&d)...)
		r.APIVersion, r.Kind, r.Metadata, r.Training = d.APIVersion, d.Kind, d.Metadata, &d.Spec
	case KindMPI:
		var d mpiDoc
		ps = append(ps, doc.Decode(&d)...)
		r.APIVersion, r.Kind, r.Metadata, r.MPI = d.APIVersion, d.Kind, d.Metadata, &d.Spec
	case KindServing:
		var d servingDoc
		ps = append(ps, doc.Decode(&d)...)
		r.APIVersion, r.Kind, r.Metadata, r.Serving = d.APIVersion, d.Kind, d.Metadata, &d.Spec
	default:
		r.APIVersion, r.Kind, r.Metadata = h.APIVersion, h.Kind, h.Metadata
	}
	r.Default()
	// Validation problems on a path that already failed to decode would only repeat it.
	bad := map[string]bool{}
	for _, p := range ps {
		bad[p.Path] = true
	}
	var vps strict.Problems
	if err := r.Validate(); err != nil {
		vps = err.(strict.Problems)
	}
	for _, p := range vps {
		if !bad[p.Path] {
			ps = append(ps, p)
		}
	}
	if len(ps) > 0 {
		sortProblems(ps)
		return nil, ps
	}
	return r, nil
}

// sortProblems orders problems by source then line, --set problems last, stable otherwise.
func sortProblems(ps strict.Problems) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		as, bs := strings.HasPrefix(a.Source, "--set"), strings.HasPrefix(b.Source, "--set")
		if as != bs {
			return !as
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Line < b.Line
	})
}

// Builtin returns the embedded recipe file NAME.yaml.
func Builtin(name string) ([]byte, bool) {
	data, err := fs.ReadFile(recipes.FS, name+".yaml")
	return data, err == nil
}

// BuiltinRef is the name of the built-in recipe that ref (a name or a path) names by its base
// name without .yaml or .yml, and whether there is one.
func BuiltinRef(ref string) (string, bool) {
	if i := strings.LastIndexAny(ref, `/\`); i >= 0 {
		ref = ref[i+1:]
	}
	name := strings.TrimSuffix(strings.TrimSuffix(ref, ".yaml"), ".yml")
	_, ok := Builtin(name)
	return name, ok
}

// BuiltinNames lists the embedded recipes.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(recipes.FS, ".")
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(names)
	return names
}

// MaxFileBytes bounds a recipe file, read whole: the built-ins are under 8 KiB; /dev/zero given
// as a recipe is refused after reading this much instead of filling memory.
const MaxFileBytes = 4 << 20

// Resolve finds the bytes of a recipe given as a file path, a name in ./recipes, or a built-in
// name, in that order, and returns them with the source name to use in messages.
func Resolve(ref string) (source string, data []byte, err error) {
	if ref == "" {
		return "", nil, next.With(errors.New("no recipe given: name a built-in recipe or a file"), "recipes list")
	}
	if ref == "-" {
		return "", nil, errors.New("reading a recipe from stdin is not supported: save it to a file")
	}
	looksLikePath := strings.ContainsAny(ref, `/\`) || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml")
	var large *input.TooLargeError
	if data, err := input.ReadFile(ref, MaxFileBytes); err == nil {
		return ref, data, nil
	} else if errors.As(err, &large) {
		return "", nil, fmt.Errorf("recipe file %s is larger than %s: a recipe is a few KiB of YAML", ref, input.Size(MaxFileBytes))
	} else if looksLikePath {
		return "", nil, fmt.Errorf("recipe file %s: %w", ref, unwrapPathErr(err))
	}
	local := filepath.Join("recipes", ref+".yaml")
	if data, err := input.ReadFile(local, MaxFileBytes); err == nil {
		return local, data, nil
	} else if errors.As(err, &large) {
		return "", nil, fmt.Errorf("recipe file %s is larger than %s: a recipe is a few KiB of YAML", local, input.Size(MaxFileBytes))
	}
	if data, ok := Builtin(ref); ok {
		return "builtin:" + ref, data, nil
	}
	return "", nil, fmt.Errorf("no recipe %q: not a file, not ./recipes/%s.yaml, and not a built-in (built-ins: %s)",
		ref, ref, strings.Join(BuiltinNames(), ", "))
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Load resolves ref and parses it with the given --set overrides.
func Load(ref string, sets []string) (*Recipe, error) {
	return LoadOverrides(ref, SetOverrides(sets))
}

// LoadOverrides resolves ref and parses it with overrides that name their flags.
func LoadOverrides(ref string, ovs []Override) (*Recipe, error) {
	source, data, err := Resolve(ref)
	if err != nil {
		return nil, err
	}
	return ParseOverrides(source, data, ovs)
}

// Workload returns the pod-level settings of a training or MPI recipe, nil for serving.
func (r *Recipe) Workload() *Workload {
	switch {
	case r.Training != nil:
		return &r.Training.Workload
	case r.MPI != nil:
		return &r.MPI.Workload
	}
	return nil
}

// Effective renders the recipe as YAML with every default filled in.
func (r *Recipe) Effective() ([]byte, error) {
	var spec any
	switch {
	case r.Training != nil:
		spec = r.Training
	case r.MPI != nil:
		spec = r.MPI
	case r.Serving != nil:
		spec = r.Serving
	}
	return yaml.Marshal(struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Metadata   Metadata `yaml:"metadata"`
		Spec       any      `yaml:"spec"`
	}{r.APIVersion, r.Kind, r.Metadata, spec})
}
