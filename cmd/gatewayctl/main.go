// Command gatewayctl is the operator CLI over the control plane's admin API. See package
// internal/gatewayctl for the commands; --admin-url / GATEWAY_ADMIN_URL point it at a
// control plane, and --token / GATEWAY_TOKEN (or a token file) carry the operator's token
// (--admin-token / GATEWAY_ADMIN_TOKEN: the shared break-glass token).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sekgate/gateway/internal/gatewayctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := gatewayctl.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
