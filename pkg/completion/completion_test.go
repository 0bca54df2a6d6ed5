package completion

import (
	"strings"
	"testing"
)

// Both scripts ask ain for candidates and register themselves for the ain command.
func TestScriptsAskAin(t *testing.T) {
	for name, s := range map[string]string{"bash": Bash, "zsh": Zsh} {
		if !strings.Contains(s, "--generate-bash-completion") {
			t.Errorf("%s: does not ask ain for candidates", name)
		}
	}
	if !strings.Contains(Bash, "complete -o bashdefault -o default -F _ain_complete ain\n") {
		t.Errorf("bash: not registered for ain")
	}
	if !strings.HasPrefix(Zsh, "#compdef ain\n") || !strings.Contains(Zsh, "compdef _ain ain") {
		t.Errorf("zsh: not registered for ain")
	}
}
