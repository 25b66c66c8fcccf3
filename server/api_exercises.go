package server

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/exercises/console"
	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/server/stream"
)

// exerciseError maps the exercise service's errors: an unknown exercise or
// question is 404, bad input 400, an exercise this lab's profile cannot run
// 409.
//
// The message is in the request's language (?lang=ja), as the page's
// other texts are.
func exerciseError(c echo.Context, err error) error {
	msg := exercises.ErrorText(err, lang(c))
	switch {
	case errors.Is(err, exercises.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, msg)
	case errors.Is(err, exercises.ErrBadInput):
		return echo.NewHTTPError(http.StatusBadRequest, msg)
	case errors.Is(err, exercises.ErrUnavailable), errors.Is(err, exercises.ErrNotCurrent):
		return echo.NewHTTPError(http.StatusConflict, msg)
	}
	return err
}

func (s *Server) needExercises(c echo.Context) (*exercises.Service, error) {
	if l := s.l(); l.Exercises != nil {
		return l.Exercises, nil
	}
	return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "this lab runs without exercises")
}

func lang(c echo.Context) string { return c.QueryParam("lang") }

func (s *Server) listExercises(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	list, err := ex.List(c.Request().Context(), lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	return c.JSON(http.StatusOK, list)
}

// isStudent: the classroom portal forwarded the request from a student.
func isStudent(c echo.Context) bool {
	return c.Request().Header.Get(httpguard.RoleHeader) == httpguard.RoleStudent
}

// forRole leaves the instructor's choice of the next reset's cause out of
// a student's page.
func forRole(c echo.Context, d exercises.Detail) exercises.Detail {
	if d.MysteryView != nil {
		mv := *d.MysteryView
		mv.Plant = !isStudent(c)
		d.MysteryView = &mv
	}
	return d
}

func (s *Server) getExercise(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	d, err := ex.Get(c.Request().Context(), c.Param("id"), lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	return c.JSON(http.StatusOK, forRole(c, d))
}

func (s *Server) checkExercise(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	r, err := ex.Check(c.Request().Context(), c.Param("id"), lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, r)
}

func (s *Server) resetExercise(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	// The body is optional: {"cause": "..."} names a diagnosis
	// challenge's hidden cause.
	var opts exercises.ResetOptions
	if err := decodeOptional(c, &opts); err != nil {
		return err
	}
	if opts.Cause != "" && isStudent(c) {
		return echo.NewHTTPError(http.StatusForbidden, "the cause of the next reset is the instructor's to choose; reset without one for a random cause")
	}
	if err := ex.ResetWith(c.Request().Context(), c.Param("id"), opts); err != nil {
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	d, err := ex.Get(c.Request().Context(), c.Param("id"), lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	return c.JSON(http.StatusOK, forRole(c, d))
}

// publishExercise tells the stream that an exercise's progress may have
// changed (a check, a reset, an answer), so followers such as the
// classroom's dashboard re-read GET /api/exercises instead of polling it.
func (s *Server) publishExercise(id string) {
	if h := s.l().Hub; h != nil {
		m := stream.Exercise{Exercise: id}
		_, _ = h.Publish(m.Type(), m)
	}
}

type answerRequest struct {
	Choice *int `json:"choice"`
}

func (s *Server) answerQuiz(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	var req answerRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Choice == nil {
		return badRequest(`body must say {"choice": <number, from 0>}`)
	}
	r, err := ex.Answer(c.Request().Context(), c.Param("id"), c.Param("q"), *req.Choice, lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, r)
}

type stepAnswerRequest struct {
	Answer *string `json:"answer"`
}

// answerStep takes the value a student typed for a step that asks for one.
func (s *Server) answerStep(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	var req stepAnswerRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Answer == nil {
		return badRequest(`body must say {"answer": "<what you read in the lab>"}`)
	}
	r, err := ex.AnswerStep(c.Request().Context(), c.Param("id"), c.Param("step"), *req.Answer, lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, r)
}

// revealHint opens the next hint of a step, then its solution; it answers
// the exercise as GET does.
func (s *Server) revealHint(c echo.Context) error {
	ex, err := s.needExercises(c)
	if err != nil {
		return err
	}
	d, err := ex.RevealHint(c.Request().Context(), c.Param("id"), c.Param("step"), lang(c))
	if err != nil {
		return exerciseError(c, err)
	}
	s.publishExercise(c.Param("id"))
	return c.JSON(http.StatusOK, forRole(c, d))
}

type consoleRequest struct {
	Command string `json:"command"`
}

func (s *Server) runConsole(c echo.Context) error {
	con := s.l().Console
	if con == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "this lab runs without a console")
	}
	var req consoleRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	res, err := con.Run(c.Request().Context(), req.Command)
	if err != nil {
		var refused *console.RefusedError
		if errors.As(err, &refused) {
			if lang(c) == "ja" {
				return badRequest("%s", refused.Reason.JA)
			}
			return badRequest("%s", refused.Reason.EN)
		}
		return exerciseError(c, err)
	}
	s.noteConsoleOutput(res.Output)
	return c.JSON(http.StatusOK, res)
}
