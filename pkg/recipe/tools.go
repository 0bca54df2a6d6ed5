package recipe

import (
	"slices"
	"strings"
)

// Tools are the commands and Python modules a recipe's program needs from its image.
type Tools struct {
	Image    string
	Commands []string
	// Modules are Python distributions (their import names are the same for these).
	Modules []string
	// Installs are the modules the command pip-installs itself when the image lacks them (the
	// qlora recipe's bitsandbytes): missing from the image, they need the package index at run
	// time.
	Installs []string
}

// moduleHints: a module the program needs, by what its command line says. TRL's sft script
// with --use_peft loads peft, with --load_in_4bit bitsandbytes (trl/trainer/utils.py
// get_quantization_config builds a transformers BitsAndBytesConfig); trl runs on transformers.
var moduleHints = []struct{ module, needle string }{
	{"torch", "torchrun"},
	{"transformers", "transformers"},
	{"transformers", "trl"},
	{"trl", "trl"},
	{"peft", "peft"},
	{"bitsandbytes", "--load_in_4bit"},
	{"bitsandbytes", "--load_in_8bit"},
	{"bitsandbytes", "bitsandbytes"},
}

// Tools lists what the recipe's image must hold: for a serving recipe the vllm command and
// module; for a training or MPI recipe torchrun when the command runs it, and the Python
// modules its command line names (see moduleHints). An nccl-tests binary is not looked for:
// ain bench reads its output, which says when it is missing.
func (r *Recipe) Tools() Tools {
	if r.Serving != nil {
		return Tools{Image: r.Serving.Image, Commands: []string{"vllm"}, Modules: []string{"vllm", "torch", "transformers"}}
	}
	w := r.Workload()
	if w == nil {
		return Tools{}
	}
	t := Tools{Image: w.Image}
	text := strings.Join(w.Command, " ")
	if strings.Contains(text, "torchrun") {
		t.Commands = append(t.Commands, "torchrun")
	}
	for _, h := range moduleHints {
		if strings.Contains(text, h.needle) && !slices.Contains(t.Modules, h.module) {
			t.Modules = append(t.Modules, h.module)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if _, args, ok := strings.Cut(l, "pip install"); ok {
			for _, m := range t.Modules {
				if (strings.Contains(args, " "+m+"==") || strings.Contains(args, " "+m+" ") || strings.HasSuffix(args, " "+m)) && !slices.Contains(t.Installs, m) {
					t.Installs = append(t.Installs, m)
				}
			}
		}
	}
	return t
}
