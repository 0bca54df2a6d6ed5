package hang

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
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
	return finish(v), nil
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
	// err is the first error met: the readers below record it and return zero values, so an
	// opcode's case reads its operands without checking each one; run stops after the opcode.
	err  error
	zero [8]byte
}

func (u *unpickler) fail(err error) {
	if u.err == nil {
		u.err = err
	}
}

// next returns the next n bytes; past the end it records errTruncated and returns n zero bytes
// (nil when n > 8: such lengths come from bytesLen, which checked them).
func (u *unpickler) next(n int) []byte {
	if u.err != nil || n < 0 || n > len(u.b)-u.pos {
		u.fail(errTruncated)
		if n >= 0 && n <= len(u.zero) {
			return u.zero[:n]
		}
		return nil
	}
	s := u.b[u.pos : u.pos+n]
	u.pos += n
	return s
}

func (u *unpickler) push(v any) {
	if len(u.stack) >= maxPickleStack {
		u.fail(errors.New("stack too deep"))
		return
	}
	u.stack = append(u.stack, v)
}

func (u *unpickler) pop() any {
	if len(u.stack) == 0 {
		u.fail(errors.New("stack underflow"))
		return nil
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v
}

// popN removes and returns the top n items.
func (u *unpickler) popN(n int) []any {
	if len(u.stack) < n {
		u.fail(errors.New("stack underflow"))
		return nil
	}
	items := append([]any(nil), u.stack[len(u.stack)-n:]...)
	u.stack = u.stack[:len(u.stack)-n]
	return items
}

// popMark returns the items above the topmost mark and removes them and the mark.
func (u *unpickler) popMark() []any {
	for i := len(u.stack) - 1; i >= 0; i-- {
		if _, ok := u.stack[i].(mark); ok {
			items := append([]any(nil), u.stack[i+1:]...)
			u.stack = u.stack[:i]
			return items
		}
	}
	u.fail(errors.New("no mark"))
	return nil
}

func (u *unpickler) top() any {
	if len(u.stack) == 0 {
		u.fail(errors.New("stack underflow"))
		return nil
	}
	return u.stack[len(u.stack)-1]
}

// uint reads an n-byte little-endian unsigned integer (n is 1, 2, 4 or 8).
func (u *unpickler) uint(n int) uint64 {
	b := u.next(n)
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// bytesLen reads an n-byte length and then that many bytes.
func (u *unpickler) bytesLen(n int) []byte {
	l := u.uint(n)
	if l > uint64(len(u.b)-u.pos) {
		u.fail(errTruncated)
		return nil
	}
	return u.next(int(l))
}

func (u *unpickler) line() string {
	if u.err != nil {
		return ""
	}
	for i := u.pos; i < len(u.b); i++ {
		if u.b[i] == '\n' {
			s := string(u.b[u.pos:i])
			u.pos = i + 1
			return s
		}
	}
	u.fail(errTruncated)
	return ""
}

// setItems stores key, value pairs into the dict on top of the stack.
func (u *unpickler) setItems(kv []any) {
	if d, ok := u.top().(map[string]any); ok {
		for i := 0; i+1 < len(kv); i += 2 {
			d[keyString(kv[i])] = kv[i+1]
		}
	}
}

// appendItems extends the list on top of the stack.
func (u *unpickler) appendItems(items []any) {
	if l, ok := u.top().(*pyList); ok {
		l.v = append(l.v, items...)
	}
}

func (u *unpickler) getMemo(idx int) {
	v, ok := u.memo[idx]
	if !ok {
		u.fail(fmt.Errorf("memo %d not set", idx))
		return
	}
	u.push(v)
}

func (u *unpickler) run() (any, error) {
	for u.err == nil {
		op := u.next(1)
		if u.err != nil {
			break
		}
		switch c := op[0]; c {
		case 0x80: // PROTO
			u.next(1)
		case 0x95: // FRAME
			u.next(8)
		case '.': // STOP
			v := u.pop()
			return v, u.err
		default:
			if !u.binaryValue(c) && !u.textValue(c) && !u.container(c) && !u.memoOp(c) && !u.stackOp(c) {
				u.fail(fmt.Errorf("unsupported opcode 0x%02x", c))
			}
		}
	}
	return nil, u.err
}

// binaryValue pushes the value of an opcode that holds a constant, a binary number or a
// length-prefixed string, and reports whether c was one.
func (u *unpickler) binaryValue(c byte) bool {
	switch c {
	case '(':
		u.push(mark{})
	case '}':
		u.push(map[string]any{})
	case ']', 0x8f: // EMPTY_LIST, EMPTY_SET
		u.push(&pyList{})
	case ')':
		u.push([]any{})
	case 'N':
		u.push(nil)
	case 0x88:
		u.push(true)
	case 0x89:
		u.push(false)
	case 'K':
		u.push(int64(u.uint(1)))
	case 'M':
		u.push(int64(u.uint(2)))
	case 'J':
		u.push(int64(int32(u.uint(4))))
	case 0x8a: // LONG1
		u.push(longValue(u.bytesLen(1)))
	case 0x8b: // LONG4
		u.push(longValue(u.bytesLen(4)))
	case 'G':
		u.push(math.Float64frombits(binary.BigEndian.Uint64(u.next(8))))
	case 0x8c, 'U', 'C': // unicode and byte strings, 1-byte length
		u.push(string(u.bytesLen(1)))
	case 'X', 'T', 'B': // 4-byte length
		u.push(string(u.bytesLen(4)))
	case 0x8d, 0x8e: // 8-byte length
		u.push(string(u.bytesLen(8)))
	default:
		return false
	}
	return true
}

// textValue pushes the value of a protocol 0 opcode, whose argument is a line of text, and
// reports whether c was one.
func (u *unpickler) textValue(c byte) bool {
	switch c {
	case 'I', 'L': // INT, LONG (protocol 0): decimal text; "01"/"00" are True/False
		switch s := strings.TrimSuffix(u.line(), "L"); s {
		case "01":
			u.push(true)
		case "00":
			u.push(false)
		default:
			if n, e := strconv.ParseInt(s, 10, 64); e == nil {
				u.push(n)
			} else {
				u.push(s)
			}
		}
	case 'F':
		f, _ := strconv.ParseFloat(u.line(), 64)
		u.push(f)
	case 'S': // STRING (protocol 0): a quoted Python literal
		s := u.line()
		if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') {
			if q, e := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); e == nil {
				s = q
			} else {
				s = s[1 : len(s)-1]
			}
		}
		u.push(s)
	case 'V': // UNICODE (protocol 0)
		u.push(rawUnicodeEscape(u.line()))
	default:
		return false
	}
	return true
}

// container runs an opcode that builds or fills a list, tuple or dict, and reports whether c
// was one.
func (u *unpickler) container(c byte) bool {
	switch c {
	case 'a': // APPEND
		v := u.pop()
		u.appendItems([]any{v})
	case 'e', 0x90: // APPENDS, ADDITEMS
		u.appendItems(u.popMark())
	case 's': // SETITEM
		kv := u.popN(2)
		u.setItems(kv)
	case 'u': // SETITEMS
		u.setItems(u.popMark())
	case 'd': // DICT
		items := u.popMark()
		u.push(map[string]any{})
		u.setItems(items)
	case 'l': // LIST
		u.push(&pyList{v: u.popMark()})
	case 't', 0x91: // TUPLE, FROZENSET
		u.push(u.popMark())
	case 0x85, 0x86, 0x87: // TUPLE1-3
		u.push(u.popN(int(c - 0x84)))
	default:
		return false
	}
	return true
}

// memoOp runs an opcode that stores to or loads from the memo, and reports whether c was one.
func (u *unpickler) memoOp(c byte) bool {
	switch c {
	case 'q': // BINPUT
		u.memo[int(u.uint(1))] = u.top()
	case 'r': // LONG_BINPUT
		u.memo[int(u.uint(4))] = u.top()
	case 0x94: // MEMOIZE
		u.memo[len(u.memo)] = u.top()
	case 'p': // PUT (protocol 0)
		idx, _ := strconv.Atoi(u.line())
		u.memo[idx] = u.top()
	case 'h': // BINGET
		u.getMemo(int(u.uint(1)))
	case 'j': // LONG_BINGET
		u.getMemo(int(u.uint(4)))
	case 'g': // GET (protocol 0)
		idx, _ := strconv.Atoi(u.line())
		u.getMemo(idx)
	default:
		return false
	}
	return true
}

// stackOp runs an opcode that names a global, builds an object (as a placeholder string) or
// only moves the stack, and reports whether c was one.
func (u *unpickler) stackOp(c byte) bool {
	switch c {
	case 'c': // GLOBAL module\nname\n
		m := u.line()
		n := u.line()
		u.push("<global " + m + "." + n + ">")
	case 0x93: // STACK_GLOBAL
		mn := u.popN(2)
		if len(mn) == 2 {
			u.push("<global " + keyString(mn[0]) + "." + keyString(mn[1]) + ">")
		}
	case 'R', 0x81: // REDUCE, NEWOBJ: callable(args) is not called
		fa := u.popN(2)
		if len(fa) == 2 {
			u.push("<object " + keyString(fa[0]) + ">")
		}
	case 'b': // BUILD: state applied to an object we do not build
		u.pop()
	case '0': // POP
		u.pop()
	case '1': // POP_MARK
		u.popMark()
	case '2': // DUP
		u.push(u.top())
	default:
		return false
	}
	return true
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

// keyString formats a dict key, or an operand of GLOBAL/REDUCE, without walking into containers:
// pickle can make a dict or list contain itself, and fmt would follow it until the stack overflows
// (a fuzz-found crash).
func keyString(k any) string {
	switch v := k.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64, bool, nil:
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("<%T>", k)
}

// finish replaces the *pyList builders by plain slices. Pickle can share and even nest an object
// in itself through its memo: each list is converted once, maps are walked once, and the walk
// has a node budget, so a hostile input cannot make it explode.
func finish(v any) any {
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
