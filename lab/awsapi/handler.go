package awsapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"

	"k8s.io/utils/clock"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

//go:generate go run ./internal/gennames

// API versions of the query protocol, one per service.
const (
	VersionEC2   = "2016-11-15"
	VersionELB   = "2012-06-01"
	VersionELBv2 = "2015-12-01"
	VersionSTS   = "2011-06-15"
)

// Config configures a Handler.
type Config struct {
	Cloud *cloud.Cloud
	// Keys are the access keys the API accepts; a request's caller in the
	// call log is its key's (default: an empty store, which accepts no
	// request until a key is issued).
	Keys *Keys
	// Clock is what a request's X-Amz-Date is checked against (default
	// the real clock).
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Keys == nil {
		c.Keys = NewKeys()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	if c.Cloud == nil {
		return errors.New("awsapi: config needs a Cloud")
	}
	return nil
}

// maxBody bounds a request's form: the largest the lab's callers send
// (a RegisterTargets of every node) is a few kilobytes.
const maxBody = 1 << 20

// Handler serves EC2, ELB and ELBv2 in the AWS query protocol.
type Handler struct {
	cfg      Config
	services map[string]*service // by API version
}

// New builds a Handler.
func New(cfg Config) (*Handler, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, services: map[string]*service{}}
	for _, s := range h.newServices() {
		h.services[s.Version] = s
	}
	return h, nil
}

// Action is one API action: its SDK input and output types and the
// function that serves it.
type Action struct {
	Name    string
	In, Out reflect.Type
	fn      func(ctx context.Context, in any) (any, error)
}

// act declares an action once: its name is its input type's, less
// "Input" (ec2.DescribeVpcsInput serves DescribeVpcs), as aws-sdk-go-v2
// names every operation's input; STS's hand-written
// getCallerIdentityInput follows the same rule. The call log, IAM
// denials and the botocore judge all read the name from here, and
// gennames writes it into lab/cloud's vocabulary (actions_gen.go).
func act[In, Out any](fn func(context.Context, *In) (*Out, error)) Action {
	in := reflect.TypeFor[In]()
	return Action{Name: actionName(in), In: in, Out: reflect.TypeFor[Out](), fn: func(ctx context.Context, in any) (any, error) {
		return fn(ctx, in.(*In))
	}}
}

// actionName is the action an input type is for: its name without the
// "Input" suffix, starting upper case.
func actionName(in reflect.Type) string {
	n := strings.TrimSuffix(in.Name(), "Input")
	if n == "" || n == in.Name() {
		panic("awsapi: " + in.String() + " is no operation's input type")
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

type service struct {
	ID          string // ec2, elb, elbv2: names_gen.go's variable prefix
	Module      string // the SDK module gennames reads
	Version     string
	SigningName string // the SigV4 credential scope's service
	CallService string // cloud.ServiceEC2, ...
	Namespace   string
	Actions     []Action
	codec       codec
}

// Service describes one service for gennames.
type Service struct {
	ID, Module string
	Actions    []Action
}

// Services lists the services and their actions (for gennames).
func Services() []Service {
	var out []Service
	for _, s := range (&Handler{}).newServices() {
		if s.Module == "" {
			continue // hand-written types (sts.go)
		}
		out = append(out, Service{ID: s.ID, Module: s.Module, Actions: s.Actions})
	}
	return out
}

// ServiceActions lists every service's action names, with the service
// as botocore names it (ec2, elb, elbv2, sts): the botocore judge checks
// that it calls each one.
func ServiceActions() []ServiceActionNames {
	var out []ServiceActionNames
	for _, s := range (&Handler{}).newServices() {
		n := ServiceActionNames{ID: s.ID}
		for _, a := range s.Actions {
			n.Actions = append(n.Actions, a.Name)
		}
		out = append(out, n)
	}
	return out
}

// ServiceActionNames is one service's actions.
type ServiceActionNames struct {
	ID      string
	Actions []string
}

func (h *Handler) newServices() []*service {
	return []*service{
		{ID: "ec2", Module: "github.com/aws/aws-sdk-go-v2/service/ec2", Version: VersionEC2, SigningName: "ec2", CallService: cloud.ServiceEC2,
			Namespace: "http://ec2.amazonaws.com/doc/" + VersionEC2 + "/", Actions: h.ec2Actions(),
			codec: newCodec(ec2Params, ec2Elements, "item", true)},
		{ID: "elb", Module: "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing", Version: VersionELB, SigningName: "elasticloadbalancing", CallService: cloud.ServiceELB,
			Namespace: "http://elasticloadbalancing.amazonaws.com/doc/" + VersionELB + "/", Actions: h.elbActions(),
			codec: newCodec(elbParams, elbElements, "member", false)},
		{ID: "elbv2", Module: "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2", Version: VersionELBv2, SigningName: "elasticloadbalancing", CallService: cloud.ServiceELBv2,
			Namespace: "http://elasticloadbalancing.amazonaws.com/doc/" + VersionELBv2 + "/", Actions: h.elbv2Actions(),
			codec: newCodec(elbv2Params, elbv2Elements, "member", false)},
		{ID: "sts", Version: VersionSTS, SigningName: "sts", CallService: ServiceSTS,
			Namespace: "https://sts.amazonaws.com/doc/" + VersionSTS + "/", Actions: h.stsActions(),
			codec: newCodec(nil, stsElements, "member", false)},
	}
}

// apiError is an error answered in the service's error XML.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// isLoopbackHost accepts only Host headers naming the loopback interface,
// so a web page that rebinds a DNS name to 127.0.0.1 cannot drive the
// cloud from a browser.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := hex.EncodeToString(b[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// ServeHTTP answers one query-protocol request. The caller in the call
// log is the IAM user whose access key signed it (Keys).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	if !isLoopbackHost(r.Host) {
		http.Error(w, "misdirected request: the lab's AWS API answers only to a loopback Host", http.StatusMisdirectedRequest)
		return
	}
	// The body is read once: the signature covers its hash, the form is
	// parsed from it.
	form, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, nil, reqID, &apiError{http.StatusBadRequest, "MalformedQueryString", fmt.Sprintf("the request body is not a form of at most %d bytes", maxBody)})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(form))
	if err := r.ParseForm(); err != nil {
		writeError(w, nil, reqID, &apiError{http.StatusBadRequest, "MalformedQueryString", "the request body is not a form"})
		return
	}
	svc := h.services[r.Form.Get("Version")]
	if svc == nil {
		writeError(w, nil, reqID, &apiError{http.StatusBadRequest, "InvalidParameterValue",
			fmt.Sprintf("unknown API version %q; this endpoint serves EC2 %s, ELB %s, ELBv2 %s and STS %s", clip(r.Form.Get("Version")), VersionEC2, VersionELB, VersionELBv2, VersionSTS)})
		return
	}
	id, aerr := h.authenticate(r, form, svc)
	if aerr != nil {
		h.cfg.Logger.Debug("awsapi: refused", "code", aerr.Code, "message", aerr.Message)
		writeError(w, svc, reqID, aerr)
		return
	}
	// The query protocol is served at / only: a path names no caller and
	// no service here.
	if r.URL.Path != "/" {
		writeError(w, svc, reqID, &apiError{http.StatusBadRequest, "InvalidAction",
			fmt.Sprintf("The lab's AWS API serves the query protocol at path / only, not %q", clip(r.URL.Path))})
		return
	}
	name := r.Form.Get("Action")
	var a *Action
	for i := range svc.Actions {
		if svc.Actions[i].Name == name {
			a = &svc.Actions[i]
		}
	}
	if a == nil {
		writeError(w, svc, reqID, &apiError{http.StatusBadRequest, "InvalidAction", fmt.Sprintf("The action %s is not valid for this web service (the lab implements what cloud-provider-aws calls)", clip(name))})
		return
	}
	caller := id.Caller
	in := reflect.New(a.In)
	if err := svc.codec.decode(r.Form, in); err != nil {
		writeError(w, svc, reqID, decodeError(svc, err))
		return
	}
	ctx := cloud.WithService(cloud.WithCaller(r.Context(), caller), svc.CallService)
	if m := h.cfg.Cloud.Methods().Method(caller); m != "" {
		ctx = cloud.WithMethod(ctx, m)
	}
	// EC2's DryRun asks whether the caller may, and changes nothing.
	if dr := in.Elem().FieldByName("DryRun"); svc.ID == "ec2" && dr.IsValid() && !dr.IsNil() && dr.Elem().Bool() {
		err := h.cfg.Cloud.DryRun(ctx, name, nil)
		writeError(w, svc, reqID, toAPIError(svc, err))
		return
	}
	out, err := a.fn(ctx, in.Interface())
	if err != nil {
		writeError(w, svc, reqID, toAPIError(svc, err))
		return
	}
	var body bytes.Buffer
	body.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&body, `<%sResponse xmlns="%s">`, name, svc.Namespace)
	if svc.ID == "ec2" {
		writeElem(&body, "requestId", reqID)
		err = svc.codec.encode(&body, reflect.ValueOf(out))
	} else {
		body.WriteString("<" + name + "Result>")
		err = svc.codec.encode(&body, reflect.ValueOf(out))
		body.WriteString("</" + name + "Result><ResponseMetadata>")
		writeElem(&body, "RequestId", reqID)
		body.WriteString("</ResponseMetadata>")
	}
	if err != nil {
		h.cfg.Logger.Error("awsapi: encode response", "action", name, "err", err)
		writeError(w, svc, reqID, &apiError{http.StatusInternalServerError, "InternalError", err.Error()})
		return
	}
	fmt.Fprintf(&body, "</%sResponse>", name)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-Requestid", reqID)
	_, _ = w.Write(body.Bytes())
}

func validationCode(svc *service) string {
	if svc.ID == "ec2" {
		return "InvalidParameterValue"
	}
	return "ValidationError"
}

// toAPIError maps a cloud error to its wire form: the code is the cloud's
// (they are AWS's codes), the status what AWS sends for it.
func toAPIError(svc *service, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ce *cloud.Error
	if !errors.As(err, &ce) {
		return &apiError{http.StatusInternalServerError, "InternalError", err.Error()}
	}
	status := http.StatusBadRequest
	switch ce.Code {
	case cloud.ErrInjected:
		status = http.StatusInternalServerError
	case cloud.ErrRequestLimitExceeded:
		status = http.StatusServiceUnavailable
	case cloud.ErrAccessDenied, cloud.ErrUnauthorizedOperation:
		status = http.StatusForbidden
	case cloud.ErrCanceled:
		status = http.StatusServiceUnavailable
	case cloud.ErrDryRunOperation:
		status = http.StatusPreconditionFailed
	}
	code := ce.Code
	if code == cloud.ErrValidation && svc.ID == "ec2" {
		code = "InvalidParameterValue"
	}
	return &apiError{status, code, ce.Message}
}

func writeError(w http.ResponseWriter, svc *service, reqID string, e *apiError) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if svc == nil || svc.ID == "ec2" {
		b.WriteString("<Response><Errors><Error>")
		writeElem(&b, "Code", e.Code)
		writeElem(&b, "Message", e.Message)
		b.WriteString("</Error></Errors>")
		writeElem(&b, "RequestID", reqID)
		b.WriteString("</Response>")
	} else {
		fmt.Fprintf(&b, `<ErrorResponse xmlns="%s"><Error>`, svc.Namespace)
		typ := "Sender"
		if e.Status >= 500 {
			typ = "Receiver"
		}
		writeElem(&b, "Type", typ)
		writeElem(&b, "Code", e.Code)
		writeElem(&b, "Message", e.Message)
		b.WriteString("</Error>")
		writeElem(&b, "RequestId", reqID)
		b.WriteString("</ErrorResponse>")
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-Requestid", reqID)
	w.WriteHeader(e.Status)
	_, _ = w.Write(b.Bytes())
}
