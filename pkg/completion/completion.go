// Package completion holds ain's shell completion scripts. The bash and zsh scripts ask ain
// itself for candidates (--generate-bash-completion, which urfave/cli answers from the command
// tree), so they never go stale; fish's is generated from the command tree by the CLI.
package completion

// Bash is the bash completion script.
const Bash = `# ain bash completion: source <(ain completion bash)
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

// Zsh is the zsh completion script.
const Zsh = `#compdef ain
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
