package recipe

// ServingSpec is the serving section (kind Serving): vLLM replicas. The vLLM issue (#8) owns
// this file and fills it in; for now it holds the fields every serving recipe needs.
type ServingSpec struct {
	// Image is the vLLM OpenAI-compatible server image.
	Image string `yaml:"image" json:"image"`
	// Model is the model path (on the model volume) or name vLLM serves.
	Model string `yaml:"model" json:"model"`
	// Replicas is the number of model server replicas.
	Replicas int `yaml:"replicas" json:"replicas"`
	// GPUsPerReplica is the GPUs per replica (vLLM's tensor parallel size).
	GPUsPerReplica int `yaml:"gpusPerReplica" json:"gpusPerReplica"`
	// Volumes are PersistentVolumeClaims (the shared model disk).
	Volumes []Volume `yaml:"volumes,omitempty" json:"volumes,omitempty"`
}

// defaultServing fills serving defaults.
func (r *Recipe) defaultServing(s *ServingSpec) {
	if s.Replicas == 0 {
		s.Replicas = 1
		r.noteDefault("spec.replicas", "1")
	}
	if s.GPUsPerReplica == 0 {
		s.GPUsPerReplica = 1
		r.noteDefault("spec.gpusPerReplica", "1")
	}
}

// validateServing checks the serving section.
func (r *Recipe) validateServing(s *ServingSpec, v *validator) {
	v.required("spec.image", s.Image)
	v.required("spec.model", s.Model)
	v.min("spec.replicas", s.Replicas, 1)
	v.min("spec.gpusPerReplica", s.GPUsPerReplica, 1)
	r.validateVolumes(s.Volumes, v)
}
