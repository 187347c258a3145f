package lb

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KeyPair is the AWS access key pair the ELBv2 endpoint accepts: requests
// must be Signature Version 4 signed with it, as for the real API.
type KeyPair struct {
	// AccessKeyID is the access key id (AKIA…).
	AccessKeyID string
	// SecretAccessKey is the secret the signature is made with.
	SecretAccessKey string
}

// sigV4MaxSkew is how far a request's X-Amz-Date may be from the server's
// clock, as AWS allows.
const sigV4MaxSkew = 5 * time.Minute

const sigV4Algorithm = "AWS4-HMAC-SHA256"

// sigV4Auth is a parsed Authorization header of a SigV4 request.
type sigV4Auth struct {
	accessKeyID, date, region, service string
	signedHeaders                      []string
	signature                          string
}

// parseSigV4Auth parses "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/
// elasticloadbalancing/aws4_request, SignedHeaders=host;x-amz-date,
// Signature=hex".
func parseSigV4Auth(h string) (sigV4Auth, bool) {
	var a sigV4Auth
	alg, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || alg != sigV4Algorithm {
		return a, false
	}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, false
		}
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, false
			}
			a.accessKeyID, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	return a, a.accessKeyID != "" && len(a.signedHeaders) > 0 && a.signature != ""
}

// verifySigV4 checks r (whose body is body) against the key pair, for region
// and service at now, the way AWS does, and returns the AWS error a real
// endpoint answers, or nil when the signature is good.
func verifySigV4(r *http.Request, body []byte, key KeyPair, region, service string, now time.Time) *queryError {
	h := r.Header.Get("Authorization")
	if h == "" {
		if r.URL.Query().Get("X-Amz-Signature") != "" {
			return &queryError{Status: http.StatusForbidden, Code: "IncompleteSignature",
				Message: "presigned (query string) requests are not accepted by this endpoint; sign the Authorization header"}
		}
		return &queryError{Status: http.StatusForbidden, Code: "MissingAuthenticationToken", Message: "Request is missing Authentication Token"}
	}
	a, ok := parseSigV4Auth(h)
	if !ok {
		return &queryError{Status: http.StatusBadRequest, Code: "IncompleteSignature",
			Message: "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters with algorithm " + sigV4Algorithm}
	}
	if a.accessKeyID != key.AccessKeyID || r.Header.Get("X-Amz-Security-Token") != "" {
		return &queryError{Status: http.StatusForbidden, Code: "InvalidClientTokenId", Message: "The security token included in the request is invalid."}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return &queryError{Status: http.StatusBadRequest, Code: "IncompleteSignature", Message: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."}
	}
	if d := now.Sub(at); d > sigV4MaxSkew || d < -sigV4MaxSkew {
		return &queryError{Status: http.StatusBadRequest, Code: "SignatureDoesNotMatch",
			Message: fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 5 min.)",
				amzDate, now.UTC().Add(-sigV4MaxSkew).Format("20060102T150405Z"), now.UTC().Format("20060102T150405Z"))}
	}
	if a.date != at.Format("20060102") {
		return &queryError{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
			Message: fmt.Sprintf("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s'", a.date, at.Format("20060102"))}
	}
	if a.region != region {
		return &queryError{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
			Message: fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. This endpoint serves '%s'.", a.region, region)}
	}
	if a.service != service {
		return &queryError{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
			Message: fmt.Sprintf("Credential should be scoped to correct service: '%s'.", service)}
	}
	want := sigV4Signature(r, body, a, key.SecretAccessKey, amzDate)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(a.signature))) {
		return &queryError{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
			Message: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}
	}
	return nil
}

// sigV4Signature computes the signature of r as the client must have: the
// canonical request over the headers it says it signed, the string to sign,
// and the HMAC chain of the secret over date, region, service.
func sigV4Signature(r *http.Request, body []byte, a sigV4Auth, secret, amzDate string) string {
	var cr strings.Builder
	cr.WriteString(r.Method + "\n")
	cr.WriteString(sigV4URI(r.URL.EscapedPath()) + "\n")
	cr.WriteString(sigV4Query(r.URL.Query()) + "\n")
	for _, name := range a.signedHeaders {
		cr.WriteString(name + ":" + sigV4HeaderValue(r, name) + "\n")
	}
	cr.WriteString("\n" + strings.Join(a.signedHeaders, ";") + "\n")
	sum := sha256.Sum256(body)
	cr.WriteString(hex.EncodeToString(sum[:]))

	crSum := sha256.Sum256([]byte(cr.String()))
	scope := a.date + "/" + a.region + "/" + a.service + "/aws4_request"
	toSign := sigV4Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])

	k := hmacSHA256([]byte("AWS4"+secret), a.date)
	k = hmacSHA256(k, a.region)
	k = hmacSHA256(k, a.service)
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, toSign))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// sigV4HeaderValue is a signed header's canonical value: trimmed, inner
// runs of spaces collapsed, several values joined with commas.
func sigV4HeaderValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		vals = []string{strconv.FormatInt(r.ContentLength, 10)}
	default:
		vals = r.Header.Values(name)
	}
	for i, v := range vals {
		vals[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(vals, ",")
}

// sigV4URI encodes an (already escaped) path once more, as SigV4 does for
// every service but S3.
func sigV4URI(p string) string {
	if p == "" {
		return "/"
	}
	return sigV4Escape(p, false)
}

func sigV4Query(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, sigV4Escape(k, true)+"="+sigV4Escape(v, true))
		}
	}
	return strings.Join(parts, "&")
}

// sigV4Escape percent-encodes every byte but the RFC 3986 unreserved ones
// (and '/', unless slash).
func sigV4Escape(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !slash) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
