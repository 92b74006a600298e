package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve runs server over newline-delimited JSON-RPC on in and out until in
// ends, after answering every call it read, or until ctx is cancelled; then
// it returns ctx's error.
func Serve(ctx context.Context, server *sdk.Server, in io.Reader, out io.Writer) error {
	t := &drainTransport{inner: &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}}
	errc := make(chan error, 1)
	go func() { errc <- server.Run(ctx, t) }()
	select {
	case err := <-errc:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	case <-ctx.Done():
		// A read of in cannot be interrupted everywhere: give the server
		// a moment to finish what it is doing, then go.
		select {
		case <-errc:
		case <-time.After(2 * time.Second):
		}
		return ctx.Err()
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// drainTransport makes end of input mean "no more requests", not "drop the
// answers": a client that pipes its requests and closes stdin (a script, a
// test) still gets a response to each call. The SDK handles calls
// concurrently and cancels those in flight when reading stops, so the
// connection holds back end-of-input until every call read has its response.
type drainTransport struct{ inner sdk.Transport }

func (t *drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc := &drainConn{Connection: c}
	dc.cond = sync.NewCond(&dc.mu)
	return dc, nil
}

type drainConn struct {
	sdk.Connection
	mu       sync.Mutex
	cond     *sync.Cond
	inflight map[string]bool // ids of calls read and not yet answered
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.wait(ctx)
		}
		return msg, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		if c.inflight == nil {
			c.inflight = map[string]bool{}
		}
		c.inflight[fmt.Sprint(req.ID.Raw())] = true
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.inflight, fmt.Sprint(resp.ID.Raw()))
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return err
}

func (c *drainConn) Close() error {
	c.mu.Lock()
	c.inflight = nil // nothing more will be answered
	c.cond.Broadcast()
	c.mu.Unlock()
	return c.Connection.Close()
}

// wait blocks until every call read so far is answered, or ctx ends.
func (c *drainConn) wait(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.inflight) > 0 && ctx.Err() == nil {
		c.cond.Wait()
	}
}
