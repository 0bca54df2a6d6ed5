package trainlog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// literal parses the subset of Python literals and JSON that training logs print: dicts, lists,
// strings, numbers, nan/inf (NaN/Infinity in Python's json.dump), True/False/None (true/false/null)
// and numbers wrapped in a call (np.float64(1.5), tensor(1.5, device='cuda:0')), which newer
// transformers/numpy print for some metrics.
type literal struct {
	s   string
	pos int
}

func (p *literal) errorf(format string, args ...any) error {
	return fmt.Errorf("column %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *literal) skip() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// maxDepth bounds nesting (log_history is two levels deep).
const maxDepth = 32

func (p *literal) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested deeper than %d", maxDepth)
	}
	p.skip()
	if p.pos >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.dict(depth)
	case c == '[' || c == '(':
		return p.list(depth)
	case c == '\'' || c == '"':
		return p.str()
	default:
		return p.scalar(depth)
	}
}

func (p *literal) dict(depth int) (map[string]any, error) {
	p.pos++ // {
	m := map[string]any{}
	for {
		p.skip()
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			return m, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			return nil, p.errorf("dict key is not a string")
		}
		p.skip()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errorf("want ':' after key %q", ks)
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[ks] = v
		p.skip()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			return m, nil
		}
		return nil, p.errorf("want ',' or '}' after the value of %q", ks)
	}
}

func (p *literal) list(depth int) ([]any, error) {
	closer := byte(']')
	if p.s[p.pos] == '(' {
		closer = ')'
	}
	p.pos++
	var out []any
	for {
		p.skip()
		if p.pos < len(p.s) && p.s[p.pos] == closer {
			p.pos++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skip()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == closer {
			p.pos++
			return out, nil
		}
		return nil, p.errorf("want ',' or %q in a list", closer)
	}
}

func (p *literal) str() (string, error) {
	q := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.s):
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
		case c == q:
			p.pos++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf("unterminated string")
}

// scalar reads a number, a constant, or a call around a value (np.float64(x)): the call's first
// argument is the value.
func (p *literal) scalar(depth int) (any, error) {
	start := p.pos
	for p.pos < len(p.s) && strings.IndexByte(",:}])(= \t\r\n", p.s[p.pos]) < 0 {
		p.pos++
	}
	tok := p.s[start:p.pos]
	if p.pos < len(p.s) && p.s[p.pos] == '=' && tok != "" {
		// A keyword argument inside a call (tensor(1.5, device='cuda:0')): skip the name, the
		// value that follows is the list element; calls keep only their first argument.
		p.pos++
		return p.value(depth + 1)
	}
	if p.pos < len(p.s) && p.s[p.pos] == '(' && tok != "" {
		args, err := p.list(depth + 1)
		if err != nil {
			return nil, err
		}
		if len(args) == 0 {
			return nil, nil
		}
		return args[0], nil
	}
	switch tok {
	case "True", "true":
		return true, nil
	case "False", "false":
		return false, nil
	case "None", "null":
		return nil, nil
	case "nan", "NaN":
		return math.NaN(), nil
	case "inf", "Infinity":
		return math.Inf(1), nil
	case "-inf", "-Infinity":
		return math.Inf(-1), nil
	}
	if tok == "" {
		return nil, p.errorf("missing value")
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return nil, p.errorf("%q is not a number", tok)
	}
	return f, nil
}

// parseLiteral parses s (a whole dict) as a Python/JSON literal.
func parseLiteral(s string) (any, error) {
	p := &literal{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos != len(p.s) {
		return nil, p.errorf("text after the value")
	}
	return v, nil
}
