package probe

// ResultMessage is resultMessage, for the tests outside the package (they run the sandbox's
// probe scripts, whose packages import this one).
var ResultMessage = resultMessage

// The frame of a result in a termination message.
const (
	ResultBegin = resultBegin
	ResultEnd   = resultEnd
)
