package hang

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
)

// unpickle decodes the subset of Python's pickle format (protocols 0-5 opcodes that build plain
// data) that PyTorch's Flight Recorder writes: dicts, lists, tuples, strings, ints, floats, bools
// and None. torch writes its dumps with its own C++ pickler (protocol 2); Python's pickle module
// (any protocol) produces the same shapes. Nothing is executed: a GLOBAL/REDUCE (a class or a
// callable) decodes to an opaque string, which the analysis ignores.
//
// Dicts decode to map[string]any (keys formatted with fmt when not strings), lists, tuples and
// sets to []any, ints to int64 (or a decimal string when they overflow), floats to float64.
func unpickle(b []byte) (any, error) {
	u := &unpickler{b: b, memo: map[int]any{}}
	v, err := u.run()
	if err != nil {
		return nil, fmt.Errorf("pickle: %w at byte %d", err, u.pos)
	}
	return finish(v, 0), nil
}

// pyList keeps list identity while it is being built: pickle's memo refers to the same object
// that APPENDS later extends.
type pyList struct{ v []any }

type mark struct{}

const (
	maxPickleStack = 1 << 20
	maxPickleDepth = 512
)

var errTruncated = errors.New("truncated input")

type unpickler struct {
	b     []byte
	pos   int
	stack []any
	memo  map[int]any
}

func (u *unpickler) next(n int) ([]byte, error) {
	if n < 0 || n > len(u.b)-u.pos {
		return nil, errTruncated
	}
	s := u.b[u.pos : u.pos+n]
	u.pos += n
	return s, nil
}

func (u *unpickler) push(v any) error {
	if len(u.stack) >= maxPickleStack {
		return errors.New("stack too deep")
	}
	u.stack = append(u.stack, v)
	return nil
}

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 {
		return nil, errors.New("stack underflow")
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v, nil
}

// popMark returns the items above the topmost mark and removes them and the mark.
func (u *unpickler) popMark() ([]any, error) {
	for i := len(u.stack) - 1; i >= 0; i-- {
		if _, ok := u.stack[i].(mark); ok {
			items := append([]any(nil), u.stack[i+1:]...)
			u.stack = u.stack[:i]
			return items, nil
		}
	}
	return nil, errors.New("no mark")
}

func (u *unpickler) top() (any, error) {
	if len(u.stack) == 0 {
		return nil, errors.New("stack underflow")
	}
	return u.stack[len(u.stack)-1], nil
}

func (u *unpickler) readLen(n int) (int, error) {
	b, err := u.next(n)
	if err != nil {
		return 0, err
	}
	var l uint64
	switch n {
	case 1:
		l = uint64(b[0])
	case 4:
		l = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		l = binary.LittleEndian.Uint64(b)
	}
	if l > uint64(len(u.b)-u.pos) {
		return 0, errTruncated
	}
	return int(l), nil
}

func (u *unpickler) line() (string, error) {
	for i := u.pos; i < len(u.b); i++ {
		if u.b[i] == '\n' {
			s := string(u.b[u.pos:i])
			u.pos = i + 1
			return s, nil
		}
	}
	return "", errTruncated
}

func (u *unpickler) run() (any, error) {
	for {
		op, err := u.next(1)
		if err != nil {
			return nil, err
		}
		switch c := op[0]; c {
		case 0x80: // PROTO
			if _, err := u.next(1); err != nil {
				return nil, err
			}
		case 0x95: // FRAME
			if _, err := u.next(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			return u.pop()
		case '(':
			err = u.push(mark{})
		case '}':
			err = u.push(map[string]any{})
		case ']':
			err = u.push(&pyList{})
		case ')':
			err = u.push([]any{})
		case 0x8f: // EMPTY_SET
			err = u.push(&pyList{})
		case 'N':
			err = u.push(nil)
		case 0x88:
			err = u.push(true)
		case 0x89:
			err = u.push(false)
		case 'K':
			b, e := u.next(1)
			if e != nil {
				return nil, e
			}
			err = u.push(int64(b[0]))
		case 'M':
			b, e := u.next(2)
			if e != nil {
				return nil, e
			}
			err = u.push(int64(binary.LittleEndian.Uint16(b)))
		case 'J':
			b, e := u.next(4)
			if e != nil {
				return nil, e
			}
			err = u.push(int64(int32(binary.LittleEndian.Uint32(b))))
		case 0x8a, 0x8b: // LONG1, LONG4
			n := 1
			if c == 0x8b {
				n = 4
			}
			l, e := u.readLen(n)
			if e != nil {
				return nil, e
			}
			b, _ := u.next(l)
			err = u.push(longValue(b))
		case 'G':
			b, e := u.next(8)
			if e != nil {
				return nil, e
			}
			err = u.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
		case 'X', 0x8c, 0x8d, 'T', 'U', 'B', 'C', 0x8e: // unicode and byte strings
			n := 4
			switch c {
			case 0x8c, 'U', 'C':
				n = 1
			case 0x8d, 0x8e:
				n = 8
			}
			l, e := u.readLen(n)
			if e != nil {
				return nil, e
			}
			b, _ := u.next(l)
			err = u.push(string(b))
		case 'I', 'L': // INT, LONG (protocol 0): decimal text; "01"/"00" are True/False
			s, e := u.line()
			if e != nil {
				return nil, e
			}
			switch s {
			case "01":
				err = u.push(true)
			case "00":
				err = u.push(false)
			default:
				if len(s) > 0 && s[len(s)-1] == 'L' {
					s = s[:len(s)-1]
				}
				if n, e := strconv.ParseInt(s, 10, 64); e == nil {
					err = u.push(n)
				} else {
					err = u.push(s)
				}
			}
		case 'F':
			s, e := u.line()
			if e != nil {
				return nil, e
			}
			f, _ := strconv.ParseFloat(s, 64)
			err = u.push(f)
		case 'S', 'V': // STRING, UNICODE (protocol 0)
			s, e := u.line()
			if e != nil {
				return nil, e
			}
			if c == 'V' {
				s = rawUnicodeEscape(s)
			}
			if c == 'S' && len(s) >= 2 && (s[0] == '\'' || s[0] == '"') {
				if q, e := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); e == nil {
					s = q
				} else {
					s = s[1 : len(s)-1]
				}
			}
			err = u.push(s)
		case 'a': // APPEND
			v, e := u.pop()
			if e != nil {
				return nil, e
			}
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			if l, ok := t.(*pyList); ok {
				l.v = append(l.v, v)
			}
		case 'e', 0x90: // APPENDS, ADDITEMS
			items, e := u.popMark()
			if e != nil {
				return nil, e
			}
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			if l, ok := t.(*pyList); ok {
				l.v = append(l.v, items...)
			}
		case 's': // SETITEM
			v, e := u.pop()
			if e != nil {
				return nil, e
			}
			k, e := u.pop()
			if e != nil {
				return nil, e
			}
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			if d, ok := t.(map[string]any); ok {
				d[keyString(k)] = v
			}
		case 'u': // SETITEMS
			items, e := u.popMark()
			if e != nil {
				return nil, e
			}
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			if d, ok := t.(map[string]any); ok {
				for i := 0; i+1 < len(items); i += 2 {
					d[keyString(items[i])] = items[i+1]
				}
			}
		case 'd': // DICT
			items, e := u.popMark()
			if e != nil {
				return nil, e
			}
			d := map[string]any{}
			for i := 0; i+1 < len(items); i += 2 {
				d[keyString(items[i])] = items[i+1]
			}
			err = u.push(d)
		case 'l', 't', 0x91: // LIST, TUPLE, FROZENSET
			items, e := u.popMark()
			if e != nil {
				return nil, e
			}
			if c == 'l' {
				err = u.push(&pyList{v: items})
			} else {
				err = u.push(items)
			}
		case 0x85, 0x86, 0x87: // TUPLE1-3
			n := int(c - 0x84)
			if len(u.stack) < n {
				return nil, errors.New("stack underflow")
			}
			items := append([]any(nil), u.stack[len(u.stack)-n:]...)
			u.stack = u.stack[:len(u.stack)-n]
			err = u.push(items)
		case 'q', 'r': // BINPUT, LONG_BINPUT
			n := 1
			if c == 'r' {
				n = 4
			}
			b, e := u.next(n)
			if e != nil {
				return nil, e
			}
			idx := int(b[0])
			if n == 4 {
				idx = int(binary.LittleEndian.Uint32(b))
			}
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			u.memo[idx] = t
		case 0x94: // MEMOIZE
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			u.memo[len(u.memo)] = t
		case 'p': // PUT (protocol 0)
			s, e := u.line()
			if e != nil {
				return nil, e
			}
			idx, _ := strconv.Atoi(s)
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			u.memo[idx] = t
		case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
			var idx int
			switch c {
			case 'h':
				b, e := u.next(1)
				if e != nil {
					return nil, e
				}
				idx = int(b[0])
			case 'j':
				b, e := u.next(4)
				if e != nil {
					return nil, e
				}
				idx = int(binary.LittleEndian.Uint32(b))
			default:
				s, e := u.line()
				if e != nil {
					return nil, e
				}
				idx, _ = strconv.Atoi(s)
			}
			v, ok := u.memo[idx]
			if !ok {
				return nil, fmt.Errorf("memo %d not set", idx)
			}
			err = u.push(v)
		case 'c': // GLOBAL module\nname\n
			m, e := u.line()
			if e != nil {
				return nil, e
			}
			n, e := u.line()
			if e != nil {
				return nil, e
			}
			err = u.push("<global " + m + "." + n + ">")
		case 0x93: // STACK_GLOBAL
			n, e := u.pop()
			if e != nil {
				return nil, e
			}
			m, e := u.pop()
			if e != nil {
				return nil, e
			}
			err = u.push(fmt.Sprintf("<global %v.%v>", m, n))
		case 'R', 0x81: // REDUCE, NEWOBJ: callable(args) is not called
			if _, e := u.pop(); e != nil {
				return nil, e
			}
			f, e := u.pop()
			if e != nil {
				return nil, e
			}
			err = u.push(fmt.Sprintf("<object %v>", f))
		case 'b': // BUILD: state applied to an object we do not build
			if _, e := u.pop(); e != nil {
				return nil, e
			}
		case '0': // POP
			_, err = u.pop()
		case '1': // POP_MARK
			_, err = u.popMark()
		case '2': // DUP
			t, e := u.top()
			if e != nil {
				return nil, e
			}
			err = u.push(t)
		default:
			return nil, fmt.Errorf("unsupported opcode 0x%02x", c)
		}
		if err != nil {
			return nil, err
		}
	}
}

func longValue(b []byte) any {
	if len(b) == 0 {
		return int64(0)
	}
	if len(b) <= 8 {
		var v int64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | int64(b[i])
		}
		if shift := 64 - 8*len(b); shift > 0 {
			v = v << shift >> shift // sign-extend
		}
		return v
	}
	// Two's complement little-endian of any length: keep it exact as a decimal string.
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	n := new(big.Int).SetBytes(be)
	if b[len(b)-1]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return n.String()
}

func keyString(k any) string {
	switch v := k.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(k)
}

// finish replaces the *pyList builders by plain slices. Pickle can share and even nest an object
// in itself through its memo: each list is converted once, maps are walked once, and the walk
// has a node budget, so a hostile input cannot make it explode.
func finish(v any, _ int) any {
	f := &finisher{lists: map[*pyList][]any{}, maps: map[uintptr]bool{}, budget: 1 << 24}
	return f.walk(v, 0)
}

type finisher struct {
	lists  map[*pyList][]any
	maps   map[uintptr]bool
	budget int
}

func (f *finisher) walk(v any, depth int) any {
	f.budget--
	if depth > maxPickleDepth || f.budget < 0 {
		return nil
	}
	switch x := v.(type) {
	case *pyList:
		if out, ok := f.lists[x]; ok {
			return out
		}
		out := make([]any, len(x.v))
		f.lists[x] = out
		for i, e := range x.v {
			out[i] = f.walk(e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = f.walk(e, depth+1)
		}
		return out
	case map[string]any:
		id := reflect.ValueOf(x).Pointer()
		if f.maps[id] {
			return x
		}
		f.maps[id] = true
		for k, e := range x {
			x[k] = f.walk(e, depth+1)
		}
		return x
	case mark:
		return nil
	}
	return v
}

// rawUnicodeEscape decodes protocol 0's UNICODE argument: Latin-1 bytes with \uXXXX and
// \UXXXXXXXX escapes.
func rawUnicodeEscape(s string) string {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
			n := 4
			if s[i+1] == 'U' {
				n = 8
			}
			if i+2+n <= len(s) {
				if v, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32); err == nil {
					out = append(out, rune(v))
					i += 1 + n
					continue
				}
			}
		}
		out = append(out, rune(c))
	}
	return string(out)
}
