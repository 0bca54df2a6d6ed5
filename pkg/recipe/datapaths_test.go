package recipe

import (
	"reflect"
	"testing"
)

func TestDataPathsBuiltins(t *testing.T) {
	cases := map[string][]DataPath{
		"qlora": {
			{DataModel, "/shared/models/Qwen2.5-7B-Instruct", "spec.command --model_name_or_path"},
			{DataDataset, "/shared/datasets/course-qa", "spec.command --dataset_name"},
			{DataOutput, "/shared/adapters/qlora-qwen2.5-7b", "spec.command --output_dir"},
		},
		"qlora-merge": {
			{DataModel, "/shared/models/Qwen2.5-7B-Instruct", "spec.env.BASE_MODEL"},
			{DataOutput, "/shared/models/Qwen2.5-7B-Instruct-qlora-merged", "spec.env.MERGED_OUT"},
		},
		"vllm":      {{DataModel, "/shared/models/Qwen2.5-7B-Instruct", "spec.model"}},
		"allreduce": nil,
	}
	for name, want := range cases {
		r, err := Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.DataPaths(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: DataPaths() = %+v, want %+v", name, got, want)
		}
	}
}

func TestDataPathsForms(t *testing.T) {
	r := &Recipe{Training: &TrainingSpec{Workload: Workload{Command: []string{
		"torchrun", "train.py", "--model_name_or_path", "/m/x/", "--dataset_name=org/hub-set", "--output_dir", "out", "--output_dir",
	}}}}
	want := []DataPath{{DataModel, "/m/x", "spec.command --model_name_or_path"}}
	if got := r.DataPaths(); !reflect.DeepEqual(got, want) {
		t.Errorf("DataPaths() = %+v, want %+v (hub names and relative paths are not paths)", got, want)
	}
}

func TestMountFor(t *testing.T) {
	vols := []Volume{{Name: "a", MountPath: "/shared"}, {Name: "b", MountPath: "/shared/models/"}, {Name: "c", MountPath: "/sharedx"}}
	for p, want := range map[string]string{"/shared/models/q": "b", "/shared/d": "a", "/shared": "a", "/sharedx/y": "c", "/other": ""} {
		got := ""
		if v := MountFor(vols, p); v != nil {
			got = v.Name
		}
		if got != want {
			t.Errorf("MountFor(%s) = %q, want %q", p, got, want)
		}
	}
}

func TestToolsBuiltins(t *testing.T) {
	cases := map[string]Tools{
		"qlora":       {Image: "huggingface/trl:0.25.1", Commands: []string{"torchrun"}, Modules: []string{"torch", "transformers", "trl", "peft", "bitsandbytes"}, Installs: []string{"bitsandbytes"}},
		"qlora-merge": {Image: "huggingface/trl:0.25.1", Modules: []string{"transformers", "peft"}},
		"vllm":        {Image: "vllm/vllm-openai:v0.30.0", Commands: []string{"vllm"}, Modules: []string{"vllm", "torch", "transformers"}},
	}
	for name, want := range cases {
		r, err := Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Tools(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Tools() = %+v, want %+v", name, got, want)
		}
	}
}
