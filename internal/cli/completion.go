package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
)

// Shell completion scripts. bash and zsh ask ain itself for candidates
// (--generate-bash-completion, which urfave/cli answers from the command tree), so they never
// go stale; fish gets a static script generated from the command tree.
const bashCompletion = `# ain bash completion: source <(ain completion bash)
_ain_complete() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  return 0
}
complete -o bashdefault -o default -F _ain_complete ain
`

const zshCompletion = `#compdef ain
# ain zsh completion: source <(ain completion zsh)
_ain() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
if [ "$funcstack[1]" = "_ain" ]; then _ain "$@"; else compdef _ain ain; fi
`

func (a *App) completionCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Examples:\n  source <(ain completion bash)          # add to ~/.bashrc\n" +
			"  source <(ain completion zsh)           # add to ~/.zshrc\n" +
			"  ain completion fish > ~/.config/fish/completions/ain.fish",
		Action: func(c *ucli.Context) error {
			switch c.Args().First() {
			case "bash":
				fmt.Fprint(a.Streams.Out, bashCompletion)
			case "zsh":
				fmt.Fprint(a.Streams.Out, zshCompletion)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				fmt.Fprint(a.Streams.Out, s)
			default:
				return ainerr.Usagef("ain completion bash|zsh|fish (got %q)", c.Args().First())
			}
			return nil
		},
	}
}

// Markdown renders the command tree as the CLI reference (docs/cli.md).
func (a *App) Markdown() (string, error) {
	return a.newApp().ToMarkdown()
}
