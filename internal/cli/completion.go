package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/ain-hpc/ain/internal/ainerr"
	"github.com/ain-hpc/ain/pkg/completion"
)

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
				fmt.Fprint(a.Streams.Out, completion.Bash)
			case "zsh":
				fmt.Fprint(a.Streams.Out, completion.Zsh)
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
