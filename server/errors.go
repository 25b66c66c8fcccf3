package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/controllers"
)

// busyRetryAfter is the Retry-After of a 503 for a controller whose previous
// instance is still draining: the manager has already waited its stop
// timeout, so a few seconds more is the honest hint.
const busyRetryAfter = 5

// controllerError maps the controller manager's sentinel errors to HTTP:
// a name no lab has is 404, a controller this lab's profile lacks is 409, a
// controller still draining (or a manager shutting down) is 503, the first
// with Retry-After.
func controllerError(c echo.Context, err error) error {
	switch {
	case errors.Is(err, controllers.ErrUnknownController):
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	case errors.Is(err, controllers.ErrNotInProfile):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	case errors.Is(err, controllers.ErrBusy):
		c.Response().Header().Set("Retry-After", strconv.Itoa(busyRetryAfter))
		return echo.NewHTTPError(http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, controllers.ErrStopped):
		return echo.NewHTTPError(http.StatusServiceUnavailable, err.Error())
	}
	return err
}
