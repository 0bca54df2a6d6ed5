package nccl

import "bytes"

// stripLinePrefix removes what launchers and log collectors put in front of a program's own
// output, so that NCCL and nccl-tests lines can be read the same way whoever ran them:
//
//	[1,0]<stdout>:...      Open MPI --tag-output (jobid,rank)
//	1: ...                 srun --label
//	[default0]:... [rank3]: torchrun / torch.distributed.run --tee
//	[pod/x/c] ...          kubectl logs --prefix
//	2024-05-01T12:00:00.123Z ...  kubectl logs --timestamps
//	(indentation)          documentation and pasted logs
//
// label is the launcher's rank or task label when one was found (without brackets), else nil.
// Neither result is a copy: both alias line.
func stripLinePrefix(line []byte) (rest, label []byte) {
	rest = trimLeftSpace(line)
	for i := 0; i < 4; i++ { // prefixes can stack: timestamp, then [1,0]<stdout>:, then indentation
		n := len(rest)
		rest, label = stripOnePrefix(rest, label)
		rest = trimLeftSpace(rest)
		if len(rest) == n {
			break
		}
	}
	return rest, label
}

func stripOnePrefix(s, label []byte) ([]byte, []byte) {
	if len(s) == 0 {
		return s, label
	}
	switch c := s[0]; {
	case c == '[':
		end := bytes.IndexByte(s, ']')
		if end <= 1 || end > 160 {
			return s, label
		}
		inner := s[1:end]
		after := s[end+1:]
		// A bracket that is followed directly by a word character is part of the text
		// ("[0]mlx5_0" style), not a launcher tag.
		if len(after) > 0 && after[0] != ':' && after[0] != '<' && after[0] != ' ' && after[0] != '\t' {
			return s, label
		}
		if bytes.HasPrefix(after, []byte("<stdout>")) || bytes.HasPrefix(after, []byte("<stderr>")) {
			after = after[len("<stdout>"):]
		}
		if len(after) > 0 && after[0] == ':' {
			after = after[1:]
		}
		if i := bytes.LastIndexByte(inner, ','); i >= 0 {
			inner = inner[i+1:] // [jobid,rank]
		}
		return after, inner
	case c >= '0' && c <= '9':
		// srun --label "12: " or an RFC 3339 timestamp "2024-05-01T12:00:00Z ".
		i := 0
		for i < len(s) && i < 8 && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i < len(s)-1 && s[i] == ':' && (s[i+1] == ' ' || s[i+1] == '\t') {
			return s[i+2:], s[:i]
		}
		if i == 4 && len(s) > 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' {
			// The zone: "Z" or a "+hh:mm"/"-hh:mm" offset after the seconds (index 19).
			if sp := bytes.IndexByte(s[:min(len(s), 40)], ' '); sp > 19 && (s[sp-1] == 'Z' || bytes.IndexByte(s[19:sp], '+') >= 0 || bytes.IndexByte(s[19:sp], '-') >= 0) {
				return s[sp+1:], label
			}
		}
	}
	return s, label
}

// indexNCCL is bytes.Index(line, bNCCL), quicker on the lines of a log: their first 'N' is
// almost always the header's "NCCL ", found by one IndexByte.
func indexNCCL(line []byte) int {
	i := bytes.IndexByte(line, 'N')
	if i < 0 || bytes.HasPrefix(line[i:], bNCCL) {
		return i
	}
	if j := bytes.Index(line[i+1:], bNCCL); j >= 0 {
		return i + 1 + j
	}
	return -1
}

func trimLeftSpace(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r') {
		s = s[1:]
	}
	return s
}

func trimRightSpace(s []byte) []byte {
	for len(s) > 0 {
		c := s[len(s)-1]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// atoiBytes parses a non-negative decimal integer; ok is false on anything else or overflow.
func atoiBytes(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// leadingInt parses the decimal digits at the start of b.
func leadingInt(b []byte) (int, bool) {
	i := 0
	for i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return atoiBytes(b[:i])
}

// intAfter finds key in s and parses the integer that follows it (after spaces).
func intAfter(s []byte, key string) (int, bool) {
	i := bytes.Index(s, []byte(key))
	if i < 0 {
		return 0, false
	}
	return leadingInt(trimLeftSpace(s[i+len(key):]))
}
