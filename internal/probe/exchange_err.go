package probe

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"
)

// Errors of failed exchanges, in the shapes Classify understands.
var (
	// errClosedBeforeResponse: the peer closed the connection (FIN) before
	// the response began. fasthttp reports it as ErrConnectionClosed.
	errClosedBeforeResponse = fmt.Errorf("connection closed before the response: %w", io.EOF)
	// errTimedOut: no complete response within the request's timeout.
	// fasthttp reports it as ErrTimeout, which is no net.Error.
	errTimedOut = fmt.Errorf("no complete response within the timeout: %w", context.DeadlineExceeded)
)

// observedErr turns the error of fasthttp's HostClient.Do into one that
// Classify reads as net/http's would be read, using the socket error the
// exchange's connection saw (c; nil when no connection was obtained):
//
//   - fasthttp reports any failure on a response's first byte (FIN, reset)
//     as ErrConnectionClosed (or io.EOF); the socket's own error says which.
//   - ErrTimeout becomes a context.DeadlineExceeded.
//   - ErrNoFreeConns and a response head larger than the read buffer are the
//     prober's own limits (errLocalLimit: probe errors).
//   - Any other error keeps its text and gains the socket's error, so a
//     chunked body cut by a reset still reads as a reset.
//
// Dial errors come from the prober's dialer as the net package's own.
func observedErr(err error, c *probeConn) error {
	var sockErr error
	if c != nil {
		sockErr = c.err
	}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case err == fasthttp.ErrConnectionClosed || err == io.EOF:
		if sockErr == nil || sockErr == io.EOF {
			return errClosedBeforeResponse
		}
		return sockErr
	case err == fasthttp.ErrTimeout:
		if sockErr != nil && isTimeout(sockErr) {
			return sockErr
		}
		return errTimedOut
	case err == fasthttp.ErrNoFreeConns:
		return fmt.Errorf("%w: every connection of the pool busy: %w", errLocalLimit, err)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return fmt.Errorf("%w: response body larger than %d bytes: %w", errLocalLimit, maxBodySize, err)
	case errors.As(err, &small):
		return fmt.Errorf("%w: response head larger than %d bytes: %w", errLocalLimit, readBufferSize, err)
	case sockErr != nil && !errors.Is(err, sockErr):
		return fmt.Errorf("%w: %w", err, sockErr)
	}
	return err
}
