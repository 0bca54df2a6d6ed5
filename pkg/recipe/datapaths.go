package recipe

import (
	"maps"
	"path"
	"slices"
	"strings"
)

// DataKind says what a path a recipe names holds.
type DataKind string

// Kinds of data path.
const (
	DataModel   DataKind = "model"   // a Hugging Face model directory: config, tokenizer, weights
	DataDataset DataKind = "dataset" // a dataset file or directory
	DataOutput  DataKind = "output"  // where the job writes (checkpoints, an adapter, a merged model)
)

// DataPath is a model, dataset or output path a recipe names, and the field that names it.
type DataPath struct {
	Kind  DataKind
	Path  string
	Field string
}

// dataFlags are the command-line flags of the trainers ain's recipes run (TRL's and
// transformers' HfArgumentParser dataclasses: ModelConfig.model_name_or_path,
// ScriptArguments.dataset_name, TrainingArguments.output_dir) that name a path.
var dataFlags = map[string]DataKind{
	"--model_name_or_path": DataModel,
	"--dataset_name":       DataDataset,
	"--dataset_path":       DataDataset,
	"--train_file":         DataDataset,
	"--output_dir":         DataOutput,
}

// dataEnv are the environment variables of ain's recipes that name a path (qlora-merge:
// BASE_MODEL in, MERGED_OUT out).
var dataEnv = map[string]DataKind{
	"BASE_MODEL": DataModel,
	"MODEL_PATH": DataModel,
	"DATASET":    DataDataset,
	"MERGED_OUT": DataOutput,
	"OUTPUT_DIR": DataOutput,
}

// DataPaths lists the absolute model, dataset and output paths the recipe names: a serving
// recipe's spec.model, and in a training or MPI recipe the trainer flags of spec.command
// (--model_name_or_path=P or --model_name_or_path P, --dataset_name, --output_dir) and the
// variables of spec.env above. A relative value (a Hugging Face hub name such as
// Qwen/Qwen2.5-7B-Instruct) is not a path and is left out. Each path appears once, first
// naming wins.
func (r *Recipe) DataPaths() []DataPath {
	var out []DataPath
	seen := map[string]bool{}
	add := func(k DataKind, p, field string) {
		p = strings.TrimSpace(p)
		if !path.IsAbs(p) {
			return
		}
		p = path.Clean(p)
		if seen[string(k)+p] {
			return
		}
		seen[string(k)+p] = true
		out = append(out, DataPath{Kind: k, Path: p, Field: field})
	}
	if r.Serving != nil {
		add(DataModel, r.Serving.Model, "spec.model")
		return out
	}
	w := r.Workload()
	if w == nil {
		return nil
	}
	for i, a := range w.Command {
		flag, val, eq := strings.Cut(a, "=")
		k, ok := dataFlags[flag]
		if !ok {
			continue
		}
		if !eq {
			if i+1 >= len(w.Command) {
				continue
			}
			val = w.Command[i+1]
		}
		add(k, val, "spec.command "+flag)
	}
	for _, name := range slices.Sorted(maps.Keys(w.Env)) {
		if k, ok := dataEnv[name]; ok {
			add(k, w.Env[name], "spec.env."+name)
		}
	}
	return out
}

// MountFor returns the volume of vols whose mountPath holds p (the deepest one), or nil.
func MountFor(vols []Volume, p string) *Volume { return volumeAt(vols, path.Clean(p)) }
