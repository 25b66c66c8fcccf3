package awsapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

// authNow is the lab's clock in the signature tests.
var authNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// req is a query-protocol request to sign: what a client would send.
type req struct {
	version, action string
	params          url.Values
	path            string      // default "/"
	creds           Credentials // default: the lab's "test" key
	scope, region   string      // default: the service's signing name, the lab's region
	at              time.Time   // default authNow
	// before runs on the request before it is signed, after on the
	// signed request (a tamperer on the wire).
	before, after func(r *http.Request)
	noAuth        bool
	raw           string // the body, instead of the form of the fields above
}

func (l *lab) build(t testing.TB, q req) *http.Request {
	t.Helper()
	form := url.Values{"Action": {q.action}, "Version": {q.version}}
	for k, v := range q.params {
		form[k] = v
	}
	body := form.Encode()
	if q.raw != "" {
		body = q.raw
	}
	path := q.path
	if path == "" {
		path = "/"
	}
	r := httptest.NewRequest("POST", "http://127.0.0.1:4566"+path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if q.before != nil {
		q.before(r)
	}
	if !q.noAuth {
		creds := q.creds
		if creds == (Credentials{}) {
			var err error
			if creds, err = l.keys.Issue("test"); err != nil {
				t.Fatal(err)
			}
		}
		scope := q.scope
		if scope == "" {
			scope = "ec2"
			if q.version != VersionEC2 {
				scope = "elasticloadbalancing"
			}
		}
		region := q.region
		if region == "" {
			region = l.cloud.Config().Region
		}
		at := q.at
		if at.IsZero() {
			at = authNow
		}
		sum := sha256.Sum256([]byte(body))
		err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey},
			r, hex.EncodeToString(sum[:]), scope, region, at)
		if err != nil {
			t.Fatal(err)
		}
	}
	if q.after != nil {
		q.after(r)
	}
	return r
}

// setAuth rewrites one part of the signed Authorization header.
func setAuth(old, new string) func(r *http.Request) {
	return func(r *http.Request) {
		r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, new, 1))
	}
}

func setBody(body string) func(r *http.Request) {
	return func(r *http.Request) {
		r.Body = http.NoBody
		if body != "" {
			r.Body = httpBody(body)
		}
		r.ContentLength = int64(len(body))
	}
}

func httpBody(s string) *readCloser { return &readCloser{strings.NewReader(s)} }

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// TestSignatureRefusals: every request is signed with a key the lab
// issued, for the service it calls, in the lab's region, within five
// minutes of the lab's clock, over the body it carries; anything else is
// refused with AWS's code for it, and nothing reaches the cloud.
func TestSignatureRefusals(t *testing.T) {
	l := newLab(t)
	h, err := New(Config{Cloud: l.cloud, Keys: l.keys, Clock: testingclock.NewFakePassiveClock(authNow)})
	if err != nil {
		t.Fatal(err)
	}
	other := newCredentials() // a well-formed key the lab never issued
	test, err := l.keys.Issue("test")
	if err != nil {
		t.Fatal(err)
	}
	vpc := url.Values{"VpcId.1": {l.net.VPCID}}
	ec2Req := req{version: VersionEC2, action: "DescribeVpcs", params: vpc}
	elbReq := req{version: VersionELB, action: "DescribeLoadBalancers"}
	v2Req := req{version: VersionELBv2, action: "DescribeLoadBalancers"}
	with := func(q req, f func(*req)) req { f(&q); return q }
	for _, tc := range []struct {
		name    string
		q       req
		status  int
		code    string
		message string // a substring of the answer's message
	}{
		{name: "EC2 signed", q: ec2Req, status: 200},
		{name: "ELB signed", q: elbReq, status: 200},
		{name: "ELBv2 signed", q: v2Req, status: 200},
		{name: "four minutes old", q: with(ec2Req, func(q *req) { q.at = authNow.Add(-4 * time.Minute) }), status: 200},
		{name: "four minutes ahead", q: with(elbReq, func(q *req) { q.at = authNow.Add(4 * time.Minute) }), status: 200},

		{name: "EC2 no Authorization", q: with(ec2Req, func(q *req) { q.noAuth = true }), status: 403, code: "MissingAuthenticationToken"},
		{name: "ELB no Authorization", q: with(elbReq, func(q *req) { q.noAuth = true }), status: 403, code: "MissingAuthenticationToken"},
		{name: "EC2 unknown key", q: with(ec2Req, func(q *req) { q.creds = other }), status: 401, code: "AuthFailure"},
		{name: "ELB unknown key", q: with(elbReq, func(q *req) { q.creds = other }), status: 403, code: "InvalidClientTokenId"},
		{name: "ELBv2 unknown key", q: with(v2Req, func(q *req) { q.creds = other }), status: 403, code: "InvalidClientTokenId"},
		{name: "EC2 session token", q: with(ec2Req, func(q *req) {
			q.before = func(r *http.Request) { r.Header.Set("X-Amz-Security-Token", "FwoGZXIvYXdzE") }
		}), status: 401, code: "AuthFailure"},
		{name: "EC2 wrong secret", q: with(ec2Req, func(q *req) { q.creds = Credentials{test.AccessKeyID, other.SecretAccessKey} }),
			status: 403, code: "SignatureDoesNotMatch", message: "does not match the signature you provided"},
		{name: "ELB wrong secret", q: with(elbReq, func(q *req) { q.creds = Credentials{test.AccessKeyID, other.SecretAccessKey} }),
			status: 403, code: "SignatureDoesNotMatch"},
		{name: "ELBv2 wrong secret", q: with(v2Req, func(q *req) { q.creds = Credentials{test.AccessKeyID, other.SecretAccessKey} }),
			status: 403, code: "SignatureDoesNotMatch"},
		{name: "garbage signature", q: with(ec2Req, func(q *req) {
			q.after = func(r *http.Request) {
				a := r.Header.Get("Authorization")
				r.Header.Set("Authorization", a[:strings.Index(a, "Signature=")]+"Signature="+strings.Repeat("0", 64))
			}
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "signature in upper case", q: with(ec2Req, func(q *req) {
			q.after = func(r *http.Request) {
				a := r.Header.Get("Authorization")
				i := strings.Index(a, "Signature=") + len("Signature=")
				r.Header.Set("Authorization", a[:i]+strings.ToUpper(a[i:]))
			}
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "signed header left out of SignedHeaders", q: with(ec2Req, func(q *req) { q.after = setAuth("content-type;", "") }),
			status: 403, code: "SignatureDoesNotMatch"},
		{name: "signed header changed", q: with(ec2Req, func(q *req) {
			q.after = func(r *http.Request) {
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=latin1")
			}
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "signed header dropped", q: with(elbReq, func(q *req) {
			q.before = func(r *http.Request) { r.Header.Set("X-Amz-Meta-Note", "signed") }
			q.after = func(r *http.Request) { r.Header.Del("X-Amz-Meta-Note") }
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "extra signed header", q: with(elbReq, func(q *req) {
			q.before = func(r *http.Request) { r.Header.Set("X-Amz-Meta-Note", "signed") }
		}), status: 200},
		{name: "tampered body", q: with(ec2Req, func(q *req) {
			q.after = setBody(url.Values{"Action": {"DescribeVpcs"}, "Version": {VersionEC2}, "VpcId.1": {"vpc-00000000000000000"}}.Encode())
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "tampered body under its claimed hash", q: with(ec2Req, func(q *req) {
			q.before = func(r *http.Request) {
				sum := sha256.Sum256([]byte(url.Values{"Action": {"DescribeVpcs"}, "Version": {VersionEC2}, "VpcId.1": {l.net.VPCID}}.Encode()))
				r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
			}
			q.after = setBody(url.Values{"Action": {"DescribeVpcs"}, "Version": {VersionEC2}}.Encode())
		}), status: 403, code: "SignatureDoesNotMatch"},
		{name: "EC2 dated 2001", q: with(ec2Req, func(q *req) { q.at = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }),
			status: 400, code: "RequestExpired", message: "Request has expired."},
		{name: "ELB dated 2001", q: with(elbReq, func(q *req) { q.at = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }),
			status: 403, code: "SignatureDoesNotMatch", message: "Signature expired: 20010101T000000Z is now earlier than 20260314T115500Z (20260314T120000Z - 5 min.)"},
		{name: "EC2 six minutes ahead", q: with(ec2Req, func(q *req) { q.at = authNow.Add(6 * time.Minute) }), status: 400, code: "RequestExpired"},
		{name: "ELBv2 six minutes ahead", q: with(v2Req, func(q *req) { q.at = authNow.Add(6 * time.Minute) }),
			status: 403, code: "SignatureDoesNotMatch", message: "Signature not yet current: 20260314T120600Z is still later than 20260314T120500Z (20260314T120000Z + 5 min.)"},
		{name: "EC2 request scoped to elasticloadbalancing", q: with(ec2Req, func(q *req) { q.scope = "elasticloadbalancing" }),
			status: 403, code: "SignatureDoesNotMatch", message: "Credential should be scoped to correct service: 'ec2'."},
		{name: "ELB request scoped to ec2", q: with(elbReq, func(q *req) { q.scope = "ec2" }),
			status: 403, code: "SignatureDoesNotMatch", message: "scoped to correct service: 'elasticloadbalancing'"},
		{name: "another region", q: with(ec2Req, func(q *req) { q.region = "us-east-1" }),
			status: 403, code: "SignatureDoesNotMatch", message: "Credential should be scoped to a valid region, not 'us-east-1'."},
		{name: "scope date not X-Amz-Date's", q: with(ec2Req, func(q *req) { q.after = setAuth("/20260314/", "/20260313/") }),
			status: 403, code: "SignatureDoesNotMatch", message: "Date in Credential scope"},
		{name: "X-Amz-Date not signed", q: with(ec2Req, func(q *req) { q.after = setAuth(";x-amz-date", "") }),
			status: 400, code: "IncompleteSignature"},
		{name: "X-Amz-Date not ISO 8601", q: with(ec2Req, func(q *req) {
			q.after = func(r *http.Request) { r.Header.Set("X-Amz-Date", "Sat, 14 Mar 2026 12:00:00 GMT") }
		}), status: 400, code: "IncompleteSignature"},
		{name: "signature version 2", q: with(ec2Req, func(q *req) {
			q.after = func(r *http.Request) {
				r.Header.Set("Authorization", "AWS "+test.AccessKeyID+":frJIUN8DYpKDtOLCwo//yllqDzg=")
			}
		}), status: 400, code: "IncompleteSignature"},
		{name: "SigV4 without a signature", q: with(elbReq, func(q *req) {
			q.after = func(r *http.Request) {
				r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+test.AccessKeyID+"/20260314/"+l.cloud.Config().Region+"/elasticloadbalancing/aws4_request, SignedHeaders=host;x-amz-date")
			}
		}), status: 400, code: "IncompleteSignature"},
		{name: "credential of four parts", q: with(ec2Req, func(q *req) { q.after = setAuth("/aws4_request", "") }),
			status: 400, code: "IncompleteSignature"},
		{name: "a caller's path", q: with(ec2Req, func(q *req) { q.path = "/caller/service-controller/" }),
			status: 400, code: "InvalidAction", message: "at path / only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(l.cloud.Calls(0))
			r := l.build(t, tc.q)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			body := html.UnescapeString(w.Body.String())
			if w.Code != tc.status || tc.code != "" && !strings.Contains(body, "<Code>"+tc.code+"</Code>") ||
				tc.message != "" && !strings.Contains(body, tc.message) {
				t.Fatalf("status %d body %s; want %d %s %q", w.Code, body, tc.status, tc.code, tc.message)
			}
			calls := l.cloud.Calls(0)
			if tc.status != 200 {
				if len(calls) != before {
					t.Fatalf("a refused request reached the cloud: %+v", calls[before:])
				}
				return
			}
			if len(calls) != before+1 || calls[before].Caller != "test" {
				t.Fatalf("call log after a signed request: %+v", calls[before:])
			}
		})
	}
}

// TestHostAndVersionRefusals: a request for another Host (a DNS-rebinding
// page) or of an unknown API version is turned away before its signature
// is even looked at.
func TestHostAndVersionRefusals(t *testing.T) {
	l := newLab(t)
	h, err := New(Config{Cloud: l.cloud, Keys: l.keys, Clock: testingclock.NewFakePassiveClock(authNow)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		q      req
		host   string
		status int
		code   string
	}{
		{"rebound host", req{version: VersionEC2, action: "DescribeVpcs"}, "evil.example:4566", http.StatusMisdirectedRequest, ""},
		{"unknown version", req{version: "2011-01-01", action: "DescribeVpcs"}, "", 400, "InvalidParameterValue"},
		{"unknown action", req{version: VersionEC2, action: "RunInstances"}, "", 400, "InvalidAction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(l.cloud.Calls(0))
			r := l.build(t, tc.q)
			if tc.host != "" {
				r.Host = tc.host
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || tc.code != "" && !strings.Contains(w.Body.String(), "<Code>"+tc.code+"</Code>") {
				t.Fatalf("status %d body %s; want %d %s", w.Code, w.Body, tc.status, tc.code)
			}
			if len(l.cloud.Calls(0)) != before {
				t.Fatal("a refused request reached the cloud")
			}
		})
	}
}

// TestCallerFromKey: the call log's caller is the IAM user whose key
// signed the call: the student's key is aws-cli, a controller's key that
// controller, whatever path the request names.
func TestCallerFromKey(t *testing.T) {
	l := newLab(t)
	student, err := l.keys.Issue(StudentCaller)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := l.keys.Issue("service-controller")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := l.keys.Issue("service-controller"); again != svc {
		t.Fatal("a caller that starts again got another key")
	}
	if svc.AccessKeyID == student.AccessKeyID || svc.SecretAccessKey == student.SecretAccessKey {
		t.Fatal("two callers share a key")
	}
	client := func(c Credentials, endpoint string) *ec2.Client {
		cfg := l.cfg.Copy()
		cfg.Credentials = aws.NewCredentialsCache(staticCreds(c))
		return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	for _, tc := range []struct {
		name     string
		creds    Credentials
		endpoint string
		code     string
		caller   string // "" = nothing in the call log
	}{
		{"student", student, l.url, "", StudentCaller},
		{"service controller", svc, l.url, "", "service-controller"},
		{"student posing as the controller by path", student, l.url + "/caller/service-controller/", "InvalidAction", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(l.cloud.Calls(0))
			_, err := client(tc.creds, tc.endpoint).DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{})
			wantCode(t, err, tc.code)
			calls := l.cloud.Calls(0)[before:]
			if tc.caller == "" {
				if len(calls) != 0 {
					t.Fatalf("a refused call is in the call log: %+v", calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].Caller != tc.caller || calls[0].Action != "DescribeVpcs" {
				t.Fatalf("call log %+v, want one DescribeVpcs by %s", calls, tc.caller)
			}
		})
	}
	_, id, ok := l.keys.lookup(svc.AccessKeyID)
	if !ok || id.ARN != "arn:aws:iam::"+Account+":user/service-controller" || id.Type != "IAMUser" || id.AccountID != Account {
		t.Fatalf("identity %+v", id)
	}
}

type staticCreds Credentials

func (c staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, Source: "test"}, nil
}

// TestIdentityAccount: the account of the lab's IAM users is the one in
// the ARNs of its load balancers.
func TestIdentityAccount(t *testing.T) {
	l := newLab(t)
	nlb, err := l.cloud.CreateNLB(cloud.WithCaller(context.Background(), "test"), cloud.CreateNLBInput{Name: "acct", Subnets: []string{l.net.Subnets[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(nlb.ARN, ":"); len(parts) < 5 || parts[4] != Account {
		t.Fatalf("ARN %s is not of account %s", nlb.ARN, Account)
	}
}
