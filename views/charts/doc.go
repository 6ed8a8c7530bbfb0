// Package charts draws the report's charts as SVG, with gonum's plot
// library: lines of points (a metric across attempts, a sweep's
// throughput against latency with its Pareto front), bars (a latency
// distribution) and a timeline of each attempt's steps. Each function
// takes plain data and returns an SVG element to inline in a page: no
// fonts embedded (the page's own are used), no script, text escaped.
//
// Start reading at Lines; Front is the Pareto front a sweep is judged by.
package charts
