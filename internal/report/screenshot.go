//go:build ignore

// screenshot takes the README's picture of a report: it loads the HTML in
// headless Chromium, hovers one second of the requests chart (so the picture
// shows the tooltip) and writes a PNG of the top of the page.
//
//	mythex demo --report /tmp/demo.html
//	go run internal/report/screenshot.go -in /tmp/demo.html -out docs/report-demo.png
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

func main() {
	in := flag.String("in", "", "report HTML")
	out := flag.String("out", "", "PNG to write")
	at := flag.Float64("hover", 0.45, "where to hover, as a fraction of the requests chart's width")
	height := flag.Int("height", 1180, "height of the picture in CSS pixels")
	dark := flag.Bool("dark", false, "prefer the dark color scheme")
	flag.Parse()
	abs, err := filepath.Abs(*in)
	if err != nil {
		log.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, *height))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		log.Fatal(err)
	}
	if *dark {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
			log.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady("body")); err != nil {
		log.Fatal(err)
	}
	type box struct{ X, Y, W, H float64 }
	b, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(function(){var r=document.querySelector('[data-chart="requests"] svg').getBoundingClientRect();return {X:r.left,Y:r.top,W:r.width,H:r.height};})()`))
	if err != nil {
		log.Fatal(err)
	}
	x := b.X + 120.0/1016*b.W + *at*880.0/1016*b.W
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, b.Y+b.H*0.35), chromedp.Sleep(200*time.Millisecond)); err != nil {
		log.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, png, 0o644); err != nil {
		log.Fatal(err)
	}
}
