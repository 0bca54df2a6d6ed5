// The COLL prefilter: the line NCCL prints for every collective call, recognised by the splitter's
// workers so that the analyser only counts it.

package nccl

import "bytes"

// With NCCL_DEBUG_SUBSYS including COLL, NCCL prints one INFO line per collective call
// (NVIDIA/nccl src/enqueue.cc, ncclEnqueueCheck; the same format from 2.4 to 2.30):
//
//	INFO(NCCL_COLL, "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] stream %p",
//	     info->opName, info->comm->opCount, info->sendbuff, info->recvbuff, info->count, ...)
//
// Such a line says nothing about the transport, and its opCount, buffers and count change on
// every call, so no two are alike and the repeat cache cannot help: each one was looked up and
// then scanned by infoLine for every substring it tests with bytes.Contains, whose search for a
// marker starting with ' ' stops at each of the line's spaces (7-10x grep's time on the COLL-heavy
// benchmark log). The splitter's workers now mark these lines, and the analyser counts them as
// NCCL lines and does nothing else, which is exactly what infoLine does with them:
//
//   - the message starts with one of NCCL's opNames and ": opCount", and no opName starts like a
//     message infoLine dispatches on by prefix (NCCL_, comm, Channel, NET/, ncclCommInit, ...);
//   - the message holds no '>' and no 'i' but the one of "(nil)" (%p of a NULL buffer), while each
//     substring infoLine looks for holds one of them: " Bytes -> Algo " ('>'), " via ",
//     " set by environment to " and "GPU Direct RDMA" (an 'i' after 'v' or 'D', so never the one
//     of "(nil)"). The format's words (opCount sendbuff recvbuff count datatype op root comm
//     nranks stream) and hexadecimal values have no 'i' and no '>'.
//
// Both tests are bytes.IndexByte scans (vectorised), a few nanoseconds a line where checking the
// format field by field took ~90 ns. A substring added to infoLine must keep this argument true
// (TestCollMarkers checks the ones above); TestCollLinesCounted and FuzzCollLineExact compare with
// a full parse.

// collOp reports whether name is an opName of src/collectives.cc (all_reduce.cc and the like
// before 2.19).
func collOp(name []byte) bool {
	switch string(name) {
	case "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv",
		"AlltoAll", "Gather", "Scatter", "PutSignal", "Signal", "WaitSignal":
		return true
	}
	return false
}

var (
	bCollOpCount = []byte(": opCount ")
	bNil         = []byte("(nil)")
)

// isCollLine reports whether a line, from its first "NCCL " on (where LogAnalyzer.line looks),
// is an INFO line of the COLL format above that infoLine would only count.
func isCollLine(fromNCCL []byte) bool {
	if !bytes.HasPrefix(fromNCCL, bNCCLInfo) {
		return false
	}
	msg := fromNCCL[len(bNCCLInfo):]
	c := bytes.IndexByte(msg[:min(len(msg), 16)], ':')
	if c <= 0 || !bytes.HasPrefix(msg[c:], bCollOpCount) || !collOp(msg[:c]) {
		return false
	}
	if bytes.IndexByte(msg, '>') >= 0 {
		return false
	}
	for rest := msg; ; {
		k := bytes.IndexByte(rest, 'i')
		if k < 0 {
			return true
		}
		if k < 2 || !bytes.HasPrefix(rest[k-2:], bNil) {
			return false
		}
		rest = rest[k+1:]
	}
}
