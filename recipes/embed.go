// Package recipes embeds ain's built-in recipe files (the YAML files in this folder), so the
// binary carries them and `ain recipes show NAME` prints them as written, comments included.
package recipes

import "embed"

// FS holds the built-in recipes, one NAME.yaml per recipe.
//
//go:embed *.yaml qa/*.yaml
var FS embed.FS
