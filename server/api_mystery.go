package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/exercises"
)

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
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, v)
}
