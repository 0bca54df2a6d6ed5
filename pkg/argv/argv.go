// Package argv puts a command line in the order a parser built on Go's flag package reads
// (urfave/cli v2 is one): flags may follow positional arguments as users type them ("ain render
// qlora -o yaml"), which the flag package, stopping at the first positional argument, does not
// allow.
package argv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Command is a node of the command tree: its name and aliases, its flags (each name and alias
// mapped to whether it takes a value), its subcommands, and Raw: it parses its own arguments.
// The root's flags are the global flags, its subcommands the commands.
type Command struct {
	Names       []string
	Flags       map[string]bool
	Subcommands []*Command
	Raw         bool
}

// Reorder lets flags follow positional arguments ("ain render qlora -o yaml"), which the
// standard flag package urfave/cli v2 uses does not allow: for the command path found in args,
// global flags move before the first command and the leaf's flags right after the leaf's name;
// positional arguments follow a "--" so that one starting with "-" is not taken for a flag.
func Reorder(root *Command, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	globalVal := root.arity()
	var head, globals []string
	head = append(head, args[0])
	cmds := root.Subcommands
	var leaf *Command
	i := 1
	// Walk the command path, collecting global flags that precede or sit among command names.
	for i < len(args) {
		arg := args[i]
		if arg == "--" {
			break
		}
		if strings.HasPrefix(arg, "-") && arg != "-" {
			name, _ := splitFlag(arg)
			if _, ok := globalVal[name]; !ok || name == "help" || name == "h" {
				break
			}
			n, err := takeFlag(&globals, args, i, globalVal)
			if err != nil {
				return nil, err
			}
			i += n
			continue
		}
		next := findCommand(cmds, arg)
		if next == nil {
			break
		}
		head = append(head, arg)
		leaf = next
		cmds = next.Subcommands
		i++
	}
	if leaf == nil || leaf.Raw {
		out := append([]string{args[0]}, globals...)
		out = append(out, head[1:]...)
		return append(out, args[i:]...), nil
	}
	// urfave/cli v2 shows the parent's help for "ain doctor nccl-log --help": ask for the
	// leaf's help the way it does handle ("ain doctor help nccl-log"), as most parsers do.
	if len(head) > 2 {
		for _, arg := range args[i:] {
			if arg == "--" {
				break
			}
			if arg == "--help" || arg == "-h" || arg == "-help" {
				out := append([]string{args[0]}, globals...)
				out = append(out, head[1:len(head)-1]...)
				return append(out, "help", head[len(head)-1]), nil
			}
		}
	}
	leafVal := leaf.arity()
	var flags, positional []string
	for i < len(args) {
		arg := args[i]
		if arg == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			positional = append(positional, arg)
			i++
			continue
		}
		name, _ := splitFlag(arg)
		dest, arity := &flags, leafVal
		if _, ok := leafVal[name]; !ok {
			if _, ok := globalVal[name]; ok {
				dest, arity = &globals, globalVal
			} else {
				// Unknown flag: leave it for the parser to report.
				flags = append(flags, arg)
				i++
				continue
			}
		}
		n, err := takeFlag(dest, args, i, arity)
		if err != nil {
			return nil, err
		}
		i += n
	}
	out := append([]string{args[0]}, globals...)
	out = append(out, head[1:]...)
	out = append(out, flags...)
	if len(positional) > 0 {
		out = append(out, "--")
		out = append(out, positional...)
	}
	return out, nil
}

// takeFlag appends the known flag args[i] (and its value, when it takes one and is not written
// --flag=value) to dest and returns how many arguments it used. A flag missing its value is an
// error naming it, rather than silently taking nothing.
func takeFlag(dest *[]string, args []string, i int, arity map[string]bool) (int, error) {
	arg := args[i]
	name, hasVal := splitFlag(arg)
	*dest = append(*dest, arg)
	if !arity[name] || hasVal {
		return 1, nil
	}
	if i+1 >= len(args) {
		return 0, fmt.Errorf("flag %s needs a value (e.g. %s=VALUE)", arg, arg)
	}
	*dest = append(*dest, args[i+1])
	return 2, nil
}

func findCommand(cmds []*Command, name string) *Command {
	for _, c := range cmds {
		if slices.Contains(c.Names, name) {
			return c
		}
	}
	return nil
}

// arity maps every flag name and alias of c to whether it takes a value; every command takes
// --help and -h, without one.
func (c *Command) arity() map[string]bool {
	m := map[string]bool{"help": false, "h": false}
	maps.Copy(m, c.Flags)
	return m
}

func splitFlag(arg string) (name string, hasValue bool) {
	name = strings.TrimLeft(arg, "-")
	if k, _, ok := strings.Cut(name, "="); ok {
		return k, true
	}
	return name, false
}
