package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/server/stream"
)

// RequestSpec says where to send a request through the data plane.
type RequestSpec struct {
	// Kind is "loadbalancer" (default), "nodeport" or "clusterip".
	Kind    string `json:"kind"`
	Service string `json:"service"` // namespace/name; picks the LB, NodePort or ClusterIP
	LB      string `json:"lb"`
	Node    string `json:"node"` // for nodeport: which node receives it
	Port    int32  `json:"port"`
}

// Requester is the data plane as the server sees it.
type Requester interface {
	Listeners() stream.Listeners
	// Send routes one request and returns its trace. An error means the
	// request could not be sent at all (bad input), not that it failed.
	Send(ctx context.Context, r RequestSpec) (any, error)
	Traces() any
	// RecentTraces returns the last n traces, oldest first.
	RecentTraces(n int) []stream.Trace
}

func (s *Server) getServiceFlow(c echo.Context) error {
	key := c.Param("ns") + "/" + c.Param("name")
	f, ok := s.l().Flow.ServiceFlow(key)
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no LoadBalancer Service "+key)
	}
	return c.JSON(http.StatusOK, f)
}

func (s *Server) getNodeFlow(c echo.Context) error {
	f, ok := s.l().Flow.NodeFlow(c.Param("name"))
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no node "+c.Param("name"))
	}
	return c.JSON(http.StatusOK, f)
}

func (s *Server) getObjectEvents(c echo.Context) error {
	ns := c.Param("ns")
	if ns == "-" {
		ns = "" // cluster-scoped objects such as Nodes
	}
	return c.JSON(http.StatusOK, s.l().Flow.EventsFor(c.Param("kind"), ns, c.Param("name")))
}

func (s *Server) sendRequest(c echo.Context) error {
	l := s.l()
	if l.Requests == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "this lab runs without a data plane")
	}
	var req RequestSpec
	if err := decode(c, &req); err != nil {
		return err
	}
	switch req.Kind {
	case "":
		req.Kind = "loadbalancer"
	case "loadbalancer", "nodeport", "clusterip":
	default:
		return badRequest("kind must be loadbalancer, nodeport or clusterip, not %q", req.Kind)
	}
	if req.Service == "" && req.LB == "" {
		return badRequest("say which service (\"namespace/name\") or lb to send the request to")
	}
	trace, err := l.Requests.Send(c.Request().Context(), req)
	if err != nil {
		return badRequest("%v", err)
	}
	return c.JSON(http.StatusOK, trace)
}

func (s *Server) getTraces(c echo.Context) error {
	l := s.l()
	if l.Requests == nil {
		return c.JSON(http.StatusOK, []any{})
	}
	return c.JSON(http.StatusOK, l.Requests.Traces())
}

func (s *Server) websocket(c echo.Context) error {
	if s.l().Hub == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "no live stream in this lab")
	}
	s.l().Hub.ServeHTTP(c.Response(), c.Request())
	return nil
}

// getRecording answers the lab's recent history as NDJSON
// (docs/protocol.md, "Recordings"); `ccmlab replay` plays such a file.
func (s *Server) getRecording(c echo.Context) error {
	if s.l().Hub == nil {
		return echo.NewHTTPError(http.StatusNotFound, "this lab keeps no recording")
	}
	s.l().Hub.ServeRecording(c.Response(), c.Request())
	return nil
}
