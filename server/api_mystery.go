package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/exercises"
)

// resetOptions reads the optional body of POST /api/exercises/{id}/reset:
// none, or {"cause": "..."} for mystery-pending.
func resetOptions(c echo.Context) (exercises.ResetOptions, error) {
	var o exercises.ResetOptions
	r := c.Request()
	if r.Body == nil {
		return o, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, maxBody))
	if err != nil {
		return o, badRequest("reading body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return o, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	err = decode(c, &o)
	return o, err
}

type causeRequest struct {
	Cause string `json:"cause"`
}

// nameCause is POST /api/exercises/{id}/cause {"cause": "..."}: the
// student's diagnosis of mystery-pending. Only the first answer counts.
func (s *Server) nameCause(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	var req causeRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Cause == "" {
		return badRequest(`body must say {"cause": "<a cause id from GET /api/exercises/%s>"}`, exercises.MysteryID)
	}
	v, err := ex.NameCause(c.Request().Context(), c.Param("id"), req.Cause, lang(c))
	if err != nil {
		return exerciseError(err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, v)
}
