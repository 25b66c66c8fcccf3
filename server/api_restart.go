package server

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/lab/ccmnames"
	"github.com/ccmlab/ccmlab/lab/profile"
)

// RestartFunc restarts the lab into another profile or with other
// add-ons, keeping the exercise progress. It returns once the restart is
// under way (the lab then stops and starts again); an error means
// nothing was changed.
type RestartFunc func(profile string, addons []string) error

type restartRequest struct {
	Profile string   `json:"profile"`
	Addons  []string `json:"addons"`
}

type restartResponse struct {
	Restarting bool     `json:"restarting"`
	Profile    string   `json:"profile"`
	Addons     []string `json:"addons"`
}

// restartAddons are the add-ons a restart may ask for: an allowlist, as
// for every value that picks what the process runs.
var restartAddons = []string{ccmnames.AddonLBC}

// postRestart: POST /api/lab/restart {"profile": "kubevirt", "addons": []}.
// The page offers it for an exercise this lab cannot run (Summary.Restart),
// after a confirmation.
func (s *Server) postRestart(c echo.Context) error {
	l := s.l()
	var req restartRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if l.Restart == nil {
		return echo.NewHTTPError(http.StatusConflict, "this lab cannot restart itself: it was started by a classroom or a test; ask whoever runs it")
	}
	if _, err := profile.Get(req.Profile); err != nil {
		return badRequest("profile: %v", err)
	}
	addons := []string{}
	for _, a := range req.Addons {
		if !slices.Contains(restartAddons, a) {
			return badRequest("addons: unknown add-on %q (valid: %v)", a, restartAddons)
		}
		if !slices.Contains(addons, a) {
			addons = append(addons, a)
		}
	}
	if err := l.Restart(req.Profile, addons); err != nil {
		if fullStore(err) != 0 {
			return err // 507 (errorHandler)
		}
		return badRequest("%v", fmt.Errorf("restart: %w", err))
	}
	return c.JSON(http.StatusAccepted, restartResponse{Restarting: true, Profile: req.Profile, Addons: addons})
}
