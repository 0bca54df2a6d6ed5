package hang

import (
	"bytes"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	ogorek "github.com/kisielk/og-rek"
)

// unpickle decodes a pickle stream (protocols 0-5 as far as ogórek reads them: every opcode
// that builds plain data except sets; PyTorch's Flight Recorder writes its dumps with its own C++
// pickler, protocol 2, as dicts, lists, tuples, strings, numbers, bools and None) into plain Go
// data: dicts to map[string]any (keys formatted with fmt when not strings), lists and tuples to
// []any, ints to int64 (a decimal string when they overflow), floats to float64. ogórek executes
// nothing: a class or call the stream names decodes to a string the analysis ignores.
func unpickle(b []byte) (v any, err error) {
	r := &countingReader{r: bytes.NewReader(b)}
	defer func() {
		// A decoder bug on hostile input is an error of this input, not a crash of ain.
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("pickle: malformed input (%v) at byte %d", p, r.n)
		}
	}()
	raw, err := ogorek.NewDecoder(r).Decode()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if !strings.HasPrefix(err.Error(), "pickle: ") {
			err = fmt.Errorf("pickle: %w", err)
		}
		return nil, fmt.Errorf("%w (%d bytes read)", err, r.n)
	}
	c := &converter{seen: map[uintptr]bool{}, budget: 1 << 24}
	return c.plain(raw, 0), nil
}

// countingReader counts the bytes read (ogórek reads through a buffer, so this is where the
// input ended or a little past the opcode that failed), for errors that say where.
type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// maxPickleDepth bounds the nesting the conversion follows.
const maxPickleDepth = 512

// converter turns ogórek's values into plain Go data. A pickle can nest a dict in itself through
// its memo: a dict met again on its own path becomes nil, and the walk has a node budget, so a
// hostile input cannot make it explode.
type converter struct {
	seen   map[uintptr]bool
	budget int
}

func (c *converter) plain(v any, depth int) any {
	c.budget--
	if depth > maxPickleDepth || c.budget < 0 {
		return nil
	}
	switch x := v.(type) {
	case nil, ogorek.None:
		return nil
	case bool, string, float64, int64:
		return x
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case ogorek.Bytes:
		return string(x)
	case ogorek.ByteString:
		return string(x)
	case ogorek.Class:
		return "<global " + x.Module + "." + x.Name + ">"
	case ogorek.Call:
		return "<object <global " + x.Callable.Module + "." + x.Callable.Name + ">>"
	case ogorek.Tuple:
		return c.seq([]any(x), depth)
	case []any:
		return c.seq(x, depth)
	case map[any]any:
		id := reflect.ValueOf(x).Pointer()
		if c.seen[id] {
			return nil
		}
		c.seen[id] = true
		defer delete(c.seen, id)
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[keyString(c.plain(k, depth+1))] = c.plain(e, depth+1)
		}
		return out
	}
	return fmt.Sprintf("<%T>", v)
}

func (c *converter) seq(items []any, depth int) []any {
	out := make([]any, len(items))
	for i, e := range items {
		out[i] = c.plain(e, depth+1)
	}
	return out
}

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
