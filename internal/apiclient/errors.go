package apiclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// StatusError is an answer with a status other than 2xx. Each API's client
// maps it to its own errors by Status.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the answer's {"error": "..."} message, or else its text
	// trimmed of white space (empty when it had none).
	Message string
}

// Error formats the answer, e.g. "404 Not Found: no such target".
func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// SendError is a request that could not be sent or whose answer did not
// arrive: what http.Client.Do returned (a refused or reset connection, a
// timeout, the request's context ended). Its text is Err's.
type SendError struct {
	// URL is the full URL of the request.
	URL string
	// Err is http.Client.Do's error.
	Err error
}

// Error returns Err's text.
func (e *SendError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *SendError) Unwrap() error { return e.Err }

// message is the text of an error answer's body: its JSON "error" field when
// it has one, else the body trimmed.
func message(b []byte) string {
	var eb struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		return eb.Error
	}
	return strings.TrimSpace(string(b))
}
