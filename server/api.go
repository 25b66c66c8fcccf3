package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/lab/cloud"
	"github.com/ccmlab/ccmlab/lab/flow"
	"github.com/ccmlab/ccmlab/lab/profile"
	"github.com/ccmlab/ccmlab/server/hub"
	"github.com/ccmlab/ccmlab/server/stream"
)

// Lab is what the API acts on. It is set once the lab has started.
type Lab struct {
	Profile     profile.Profile
	Cloud       *cloud.Cloud
	Controllers Controllers
	Flow        *flow.Observer
	Hub         *hub.Hub
	// Requests sends a request through the data plane (nil: no data plane).
	Requests Requester
	// Exercises and Console are nil in a lab without them.
	Exercises *exercises.Service
	Console   *console.Console
	// Epoch names this run for websocket resumption.
	Epoch string
	// Restart, when set, restarts the lab into another profile or with
	// other add-ons (POST /api/lab/restart); nil in a lab that cannot
	// restart itself (a classroom's, a test's).
	Restart RestartFunc
	// Client is the cluster the lab writes to. The server probes it with
	// a small object while etcd's database is full, and before a reset or
	// a restart (diskfull.go); nil: no probe, and a full etcd is known
	// only from the write it refused.
	Client kubernetes.Interface
	// EtcdSpace, when set, says whether the lab's own etcd takes no
	// writes and why, in words for a student
	// (controlplane.ControlPlane.EtcdSpace); nil for an attached cluster.
	EtcdSpace func() (full bool, reason string)
	// Management, when set, is the kubevirt profile's management cluster
	// as last read (nil before the first read).
	Management func() *stream.Management
}

// SetLab makes the API answer.
func (s *Server) SetLab(l *Lab) { s.lab.Store(l) }

func (s *Server) routes() {
	// Routes are added one by one rather than through an echo Group: a
	// group with middleware turns a wrong method into 404, and a student
	// deserves to hear "method not allowed".
	api := func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
		s.echo.Add(method, "/api"+path, h, append([]echo.MiddlewareFunc{s.needLab}, m...)...)
	}
	// The routes that write say where (diskfull.go): while that store is
	// known to be full they answer 507 before trying. Not listed: step
	// mode and requests live in memory, and the console answers with what
	// kubectl printed (its deletions are how space is freed).
	data, cluster := s.needRoom(writesData, false), s.needRoom(writesData|writesCluster, false)
	before := s.needRoom(writesData|writesCluster, true) // probed before every call
	api(http.MethodGet, "/state", s.getState)
	api(http.MethodGet, "/controllers", s.getControllers)
	api(http.MethodPut, "/controllers/:name", s.putController, cluster)
	api(http.MethodGet, "/cloud/instances", s.getInstances)
	api(http.MethodPost, "/cloud/instances", s.launchInstance, data)
	api(http.MethodDelete, "/cloud/instances/:id", s.terminateInstance, data)
	api(http.MethodPost, "/cloud/instances/:id/:action", s.instanceAction, data)
	api(http.MethodGet, "/cloud/loadbalancers", s.getLoadBalancers)
	api(http.MethodGet, "/cloud/routes", s.getRoutes)
	api(http.MethodGet, "/cloud/calls", s.getCalls)
	api(http.MethodGet, "/cloud/faults", s.getFaults)
	api(http.MethodPut, "/cloud/faults", s.putFaults, data)
	api(http.MethodGet, "/cloud/stepmode", s.getStepMode)
	api(http.MethodPut, "/cloud/stepmode", s.putStepMode)
	api(http.MethodPost, "/cloud/stepmode/release", s.releaseStep)
	api(http.MethodGet, "/flows/services/:ns/:name", s.getServiceFlow)
	api(http.MethodGet, "/flows/nodes/:name", s.getNodeFlow)
	api(http.MethodGet, "/events/:kind/:ns/:name", s.getObjectEvents)
	api(http.MethodPost, "/requests", s.sendRequest)
	api(http.MethodGet, "/traces", s.getTraces)
	api(http.MethodGet, "/exercises", s.listExercises)
	api(http.MethodGet, "/exercises/:id", s.getExercise)
	api(http.MethodPost, "/exercises/:id/check", s.checkExercise, data)
	api(http.MethodPost, "/exercises/:id/reset", s.resetExercise, before)
	api(http.MethodPost, "/exercises/:id/quiz/:q", s.answerQuiz, data)
	api(http.MethodPost, "/exercises/:id/cause", s.nameCause, data)
	api(http.MethodPost, "/exercises/:id/steps/:step/answer", s.answerStep, data)
	api(http.MethodPost, "/exercises/:id/steps/:step/hint", s.revealHint, data)
	api(http.MethodPost, "/console", s.runConsole)
	api(http.MethodPost, "/lab/restart", s.postRestart, before)
	api(http.MethodGet, "/recording", s.getRecording)
	s.echo.GET("/ws", s.websocket, s.needLab)
	if s.cfg.Assets != nil {
		s.echo.GET("/*", echo.WrapHandler(s.cfg.Assets))
	}
}

func (s *Server) needLab(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.lab.Load() == nil {
			c.Response().Header().Set("Retry-After", "1")
			return echo.NewHTTPError(http.StatusServiceUnavailable, "the lab is starting")
		}
		return next(c)
	}
}

func (s *Server) l() *Lab { return s.lab.Load() }

func badRequest(format string, args ...any) error {
	return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// decode reads a JSON body strictly (httpguard.DecodeJSON): bounded
// size, application/json, no duplicate keys, no unknown fields, one value
// only. Every failure says what was wrong.
func decode(c echo.Context, dst any) error {
	return decodeWith(c, dst, httpguard.DecodeOptions{})
}

// decodeOptional is decode for a body that may be empty.
func decodeOptional(c echo.Context, dst any) error {
	return decodeWith(c, dst, httpguard.DecodeOptions{Optional: true})
}

func decodeWith(c echo.Context, dst any, opts httpguard.DecodeOptions) error {
	if e := httpguard.DecodeJSON(c.Response(), c.Request(), dst, opts); e != nil {
		return echo.NewHTTPError(e.Code, e.Msg)
	}
	return nil
}

// --- state ---

// recentCalls is how much of the call log a snapshot carries; the rest is
// at /api/cloud/calls.
const recentCalls = 200

// State builds the snapshot that /api/state returns and every new websocket
// client starts from.
func (s *Server) State(l *Lab) stream.Snapshot {
	calls := l.Cloud.Calls(0)
	if len(calls) > recentCalls {
		calls = calls[len(calls)-recentCalls:]
	}
	st := stream.Snapshot{
		Epoch:       l.Epoch,
		Profile:     stream.Profile{Name: l.Profile.Name, Controllers: l.Profile.Controllers, IngressIP: l.Profile.IngressIP, Description: l.Profile.Description},
		Controllers: l.Controllers.Status(),
		Cloud: stream.CloudState{
			State: l.Cloud.Snapshot(), Faults: stream.Faults(l.Cloud.Faults()), StepMode: l.Cloud.StepMode(),
			Waiting: nonNil(l.Cloud.Waiting()), Calls: nonNil(calls), Listeners: stream.Listeners{},
			Region: l.Cloud.Config().Region,
		},
		Traces:   []stream.Trace{},
		Snapshot: l.Flow.Snapshot(),
	}
	if l.Requests != nil {
		st.Cloud.Listeners = nonNil(l.Requests.Listeners())
		st.Traces = nonNil(l.Requests.RecentTraces(stream.RecentTraces))
		if hs, ok := l.Requests.(interface{ HealthCheckTimeScale() int }); ok {
			st.Cloud.HealthCheckTimeScale = hs.HealthCheckTimeScale()
		}
	}
	if l.Management != nil {
		st.Management = l.Management()
	}
	if l.Hub != nil {
		st.Seq = l.Hub.LastSeq()
	}
	return st
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) getState(c echo.Context) error { return c.JSON(http.StatusOK, s.State(s.l())) }

// --- controllers ---

func (s *Server) getControllers(c echo.Context) error {
	return c.JSON(http.StatusOK, s.l().Controllers.Status())
}

type controllerRequest struct {
	Enabled *bool `json:"enabled"`
}

func (s *Server) putController(c echo.Context) error {
	l := s.l()
	var req controllerRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return badRequest(`body must say {"enabled": true} or {"enabled": false}`)
	}
	// The manager validates the name; its sentinel errors say which status.
	var err error
	if *req.Enabled {
		err = l.Controllers.Enable(c.Param("name"))
	} else {
		err = l.Controllers.Disable(c.Param("name"))
	}
	if err != nil {
		return controllerError(c, err)
	}
	return c.JSON(http.StatusOK, l.Controllers.Status())
}

// --- cloud ---

func (s *Server) getInstances(c echo.Context) error {
	return c.JSON(http.StatusOK, nonNil(s.l().Cloud.Snapshot().Instances))
}

func (s *Server) getLoadBalancers(c echo.Context) error {
	return c.JSON(http.StatusOK, nonNil(s.l().Cloud.Snapshot().LoadBalancers))
}

func (s *Server) getRoutes(c echo.Context) error {
	return c.JSON(http.StatusOK, nonNil(s.l().Cloud.Snapshot().Routes))
}

func (s *Server) getCalls(c echo.Context) error {
	var since uint64
	if v := c.QueryParam("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return badRequest("since must be a non-negative integer, not %q", v)
		}
		since = n
	}
	return c.JSON(http.StatusOK, nonNil(s.l().Cloud.Calls(since)))
}
