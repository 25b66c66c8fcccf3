package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/lab/cloud"
)

type launchRequest struct {
	Zone         string `json:"zone"`
	InstanceType string `json:"instanceType"`
}

// userCtx marks the student's own actions in the call log: they appear as
// caller "user", beside the controllers' calls. They are saved before they
// are answered (a full disk answers 507 and changes nothing).
func userCtx(c echo.Context) context.Context {
	return cloud.WithSyncSave(cloud.WithCaller(c.Request().Context(), cloud.CallerUser))
}

// cloudError maps the cloud's typed errors to HTTP: a bad request is the
// caller's fault, a missing resource is 404, an injected fault or a denial
// is a refusal the student asked for (409 or 403), throttling is 429.
func cloudError(err error) error {
	var e *cloud.Error
	if !errors.As(err, &e) {
		return err
	}
	code := http.StatusConflict
	switch e.Code {
	case cloud.ErrInstanceNotFound, cloud.ErrLBNotFound, cloud.ErrRouteNotFound:
		code = http.StatusNotFound
	case cloud.ErrInvalidParameter, cloud.ErrValidation, cloud.ErrInvalidTarget:
		code = http.StatusBadRequest
	}
	switch {
	case cloud.IsDenyCode(e.Code):
		code = http.StatusForbidden
	case cloud.IsThrottleCode(e.Code):
		code = http.StatusTooManyRequests
	}
	return echo.NewHTTPError(code, e.Error())
}

func (s *Server) launchInstance(c echo.Context) error {
	var req launchRequest
	// The body is optional: an empty POST launches a default instance.
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	inst, err := s.l().Cloud.RunInstance(userCtx(c), cloud.RunInstanceInput{Zone: req.Zone, InstanceType: req.InstanceType})
	if err != nil {
		return cloudError(err)
	}
	return c.JSON(http.StatusCreated, inst)
}

func (s *Server) terminateInstance(c echo.Context) error {
	inst, err := s.l().Cloud.TerminateInstance(userCtx(c), c.Param("id"))
	if err != nil {
		return cloudError(err)
	}
	return c.JSON(http.StatusOK, inst)
}

func (s *Server) instanceAction(c echo.Context) error {
	var (
		inst cloud.Instance
		err  error
	)
	switch c.Param("action") {
	case "stop":
		inst, err = s.l().Cloud.StopInstance(userCtx(c), c.Param("id"))
	case "start":
		inst, err = s.l().Cloud.StartInstance(userCtx(c), c.Param("id"))
	default:
		return echo.NewHTTPError(http.StatusNotFound, "unknown instance action "+c.Param("action")+" (use stop or start)")
	}
	if err != nil {
		return cloudError(err)
	}
	return c.JSON(http.StatusOK, inst)
}

func (s *Server) getFaults(c echo.Context) error { return c.JSON(http.StatusOK, s.l().Cloud.Faults()) }

func (s *Server) putFaults(c echo.Context) error {
	var f cloud.Faults
	if err := decode(c, &f); err != nil {
		return err
	}
	if err := s.l().Cloud.SetFaults(f); err != nil {
		if fullStore(err) != 0 {
			return err // 507 (errorHandler)
		}
		return badRequest("%v", err)
	}
	return c.JSON(http.StatusOK, s.l().Cloud.Faults())
}

type stepModeView struct {
	Enabled bool         `json:"enabled"`
	Waiting []cloud.Call `json:"waiting"`
}

func (s *Server) stepMode() stepModeView {
	return stepModeView{Enabled: s.l().Cloud.StepMode(), Waiting: nonNil(s.l().Cloud.Waiting())}
}

func (s *Server) getStepMode(c echo.Context) error { return c.JSON(http.StatusOK, s.stepMode()) }

func (s *Server) putStepMode(c echo.Context) error {
	var req controllerRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return badRequest(`body must say {"enabled": true} or {"enabled": false}`)
	}
	s.l().Cloud.SetStepMode(*req.Enabled)
	return c.JSON(http.StatusOK, s.stepMode())
}

func (s *Server) releaseStep(c echo.Context) error {
	if !s.l().Cloud.StepMode() {
		return echo.NewHTTPError(http.StatusConflict, "step mode is off; turn it on with PUT /api/cloud/stepmode")
	}
	call, ok := s.l().Cloud.Release()
	if !ok {
		return echo.NewHTTPError(http.StatusConflict, "no cloud call is waiting")
	}
	return c.JSON(http.StatusOK, call)
}
