package operate_test

import "log/slog"

// quiet discards what the components under test log.
var quiet = slog.New(slog.DiscardHandler)
