package awsapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigV4 as AWS checks it (docs/aws.md, "Who calls"): the lab recomputes
// the signature of every request with the secret of its access key and
// compares the two. The canonical request is the SDK's own signer's, fed
// with exactly the headers the client says it signed.

const (
	sigV4Algorithm = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
	// maxSkew is how far a request's X-Amz-Date may be from the lab's
	// clock: "a request must reach AWS within five minutes of the time
	// stamp in the request" (IAM User Guide, Signing AWS API requests).
	maxSkew = 5 * time.Minute
)

// authKind is why a request is refused; each service answers it with its
// own code (authError).
type authKind int

const (
	authMissing    authKind = iota // no Authorization header
	authIncomplete                 // an Authorization header that is not SigV4's
	authUnknownKey                 // an access key (or session token) the lab never issued
	authMismatch                   // the signature, or its scope, is not the lab's
	authExpired                    // X-Amz-Date more than maxSkew from the lab's clock
)

// Messages are AWS's own where they are known (docs/aws.md cites them).
const (
	msgMismatch = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	msgMissing  = "The request must contain either a valid (registered) AWS access key ID or X.509 certificate. (the lab's key is in <data-dir>/aws.env)"
)

// authError is the answer to a refused request, in svc's spelling: EC2
// says AuthFailure and RequestExpired where ELB and ELBv2 say
// InvalidClientTokenId and SignatureDoesNotMatch.
func authError(svc *service, kind authKind, msg string) *apiError {
	ec2 := svc.ID == "ec2"
	switch kind {
	case authMissing:
		return &apiError{http.StatusForbidden, "MissingAuthenticationToken", msgMissing}
	case authIncomplete:
		return &apiError{http.StatusBadRequest, "IncompleteSignature", msg}
	case authUnknownKey:
		if ec2 {
			return &apiError{http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials"}
		}
		return &apiError{http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."}
	case authExpired:
		if ec2 {
			return &apiError{http.StatusBadRequest, "RequestExpired", "Request has expired."}
		}
		return &apiError{http.StatusForbidden, "SignatureDoesNotMatch", msg}
	default:
		if msg == "" {
			msg = msgMismatch
		}
		return &apiError{http.StatusForbidden, "SignatureDoesNotMatch", msg}
	}
}

// sigV4Auth is a parsed Authorization header.
type sigV4Auth struct {
	accessKeyID, date, region, service string
	signedHeaders                      string // as sent: "content-type;host;x-amz-date"
	signature                          string
}

// parseAuthorization reads "AWS4-HMAC-SHA256 Credential=<key>/<date>/
// <region>/<service>/aws4_request, SignedHeaders=<h1;h2>, Signature=<hex>".
// It is linear in the header's length.
func parseAuthorization(h string) (sigV4Auth, string) {
	rest, ok := strings.CutPrefix(h, sigV4Algorithm+" ")
	if !ok {
		alg, _, _ := strings.Cut(h, " ")
		return sigV4Auth{}, fmt.Sprintf("Unsupported AWS 'algorithm': '%s' (the lab's AWS API takes %s)", clip(alg), sigV4Algorithm)
	}
	var a sigV4Auth
	var credential string
	seen := map[string]bool{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || seen[k] {
			return sigV4Auth{}, "Authorization header is malformed: want Credential=..., SignedHeaders=..., Signature=..."
		}
		seen[k] = true
		switch k {
		case "Credential":
			credential = v
		case "SignedHeaders":
			a.signedHeaders = v
		case "Signature":
			a.signature = v
		default:
			return sigV4Auth{}, fmt.Sprintf("Authorization header has an unknown part '%s'", clip(k))
		}
	}
	for _, p := range []string{"Credential", "SignedHeaders", "Signature"} {
		if !seen[p] {
			return sigV4Auth{}, fmt.Sprintf("Authorization header requires '%s' parameter.", p)
		}
	}
	scope := strings.Split(credential, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || scope[0] == "" {
		return sigV4Auth{}, fmt.Sprintf("Credential '%s' is malformed: want <access key>/<yyyymmdd>/<region>/<service>/aws4_request", clip(credential))
	}
	a.accessKeyID, a.date, a.region, a.service = scope[0], scope[1], scope[2], scope[3]
	return a, ""
}

// clip keeps what a refusal quotes from the request short.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// authenticate checks r's signature and returns who signed it. body is
// the request's body, already read.
func (h *Handler) authenticate(r *http.Request, body []byte, svc *service) (Identity, *apiError) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return Identity{}, authError(svc, authMissing, "")
	}
	a, bad := parseAuthorization(header)
	if bad != "" {
		return Identity{}, authError(svc, authIncomplete, bad)
	}
	// The lab issues no temporary credentials: a session token is one it
	// never gave out.
	if r.Header.Get("X-Amz-Security-Token") != "" {
		return Identity{}, authError(svc, authUnknownKey, "")
	}
	secret, id, ok := h.cfg.Keys.lookup(a.accessKeyID)
	if !ok {
		return Identity{}, authError(svc, authUnknownKey, "")
	}
	if a.service != svc.SigningName {
		return Identity{}, authError(svc, authMismatch, fmt.Sprintf("Credential should be scoped to correct service: '%s'. ", svc.SigningName))
	}
	if region := h.cfg.Cloud.Config().Region; a.region != region {
		return Identity{}, authError(svc, authMismatch, fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. (the lab's region is %s)", clip(a.region), region))
	}
	signed := strings.Split(a.signedHeaders, ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") {
		return Identity{}, authError(svc, authIncomplete, "SignedHeaders must include host and x-amz-date (the lab takes the request's time only from X-Amz-Date)")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return Identity{}, authError(svc, authIncomplete, fmt.Sprintf("Date must be in ISO-8601 'basic format'. Got '%s'.", clip(amzDate)))
	}
	if a.date != amzDate[:8] {
		return Identity{}, authError(svc, authMismatch, fmt.Sprintf("Date in Credential scope does not match YYYYMMDD from X-Amz-Date: '%s' != '%s'.", clip(a.date), amzDate[:8]))
	}
	now := h.cfg.Clock.Now().UTC()
	switch {
	case t.Before(now.Add(-maxSkew)):
		return Identity{}, authError(svc, authExpired, fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - 5 min.)",
			amzDate, now.Add(-maxSkew).Format(amzDateFormat), now.Format(amzDateFormat)))
	case t.After(now.Add(maxSkew)):
		return Identity{}, authError(svc, authExpired, fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + 5 min.)",
			amzDate, now.Add(maxSkew).Format(amzDateFormat), now.Format(amzDateFormat)))
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	// A client may name its payload's hash; the lab signs the payload it
	// received, so a hash that is not the body's is a tampered request.
	if claimed := r.Header.Get("X-Amz-Content-Sha256"); claimed != "" && claimed != payloadHash {
		return Identity{}, authError(svc, authMismatch, "")
	}
	want, ok := expectedAuthorization(r, signed, a, payloadHash, t, Credentials{a.accessKeyID, secret})
	if !ok || want.signedHeaders != a.signedHeaders ||
		!hmac.Equal([]byte(want.signature), []byte(a.signature)) {
		return Identity{}, authError(svc, authMismatch, "")
	}
	return id, nil
}

// expectedAuthorization signs a copy of r that carries only the headers
// the client signed, with the SDK's signer, and returns what the
// Authorization header should have said. ok is false when a signed header
// is not in the request.
func expectedAuthorization(r *http.Request, signed []string, a sigV4Auth, payloadHash string, t time.Time, c Credentials) (sigV4Auth, bool) {
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	cp := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: http.Header{}}
	for _, name := range signed {
		switch name {
		case "host":
		case "content-length":
			// The SDK signs Content-Length from the request's length, and
			// only then; botocore does not sign it.
			if r.ContentLength <= 0 {
				return sigV4Auth{}, false
			}
			cp.ContentLength = r.ContentLength
		default:
			vals := r.Header.Values(name)
			if len(vals) == 0 {
				return sigV4Auth{}, false
			}
			cp.Header[textproto.CanonicalMIMEHeaderKey(name)] = vals
		}
	}
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		cp, payloadHash, a.service, a.region, t)
	if err != nil {
		return sigV4Auth{}, false
	}
	got, bad := parseAuthorization(cp.Header.Get("Authorization"))
	return got, bad == ""
}
