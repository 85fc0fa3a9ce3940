# validate.gp - predicted against measured busy time per op class, log-log, with the y = x line
# and a +-10% band (simpar validate --plot FILE.png|FILE.svg runs it).
#
# simpar sets, in a file of assignments gnuplot runs before this script (app/plot/plot.c):
#   datafile    block 0: one line per op class, "label" measured_s predicted_s;
#               block 1: the step, "step" measured_s predicted_s
#   outfile     the image to write
#   fmt         "png" or "svg"
#   title_text  the plot's title (the run and the prediction)

if (fmt eq "svg") {
    set terminal svg size 1200,860 dynamic font "Helvetica,15"
} else {
    set terminal pngcairo size 1200,860 font "Helvetica,13"
}
set encoding utf8
set output outfile
set title title_text noenhanced
set logscale xy
set format x "10^{%T}"
set format y "10^{%T}"
set xlabel "measured busy time per rank (s)"
set ylabel "predicted busy time per rank (s)"
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left box opaque reverse Left

stats datafile using 2:3 nooutput
lo = (STATS_min_x < STATS_min_y ? STATS_min_x : STATS_min_y) / 3
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 3
set xrange [lo:hi]
set yrange [lo:hi]
set samples 400

plot '+' using 1:(0.9 * $1):(1.1 * $1) with filledcurves lc rgb "#a6cee3" fs solid 0.4 \
         title "±10%", \
     x with lines lc rgb "#333333" dt 2 title "y = x (prediction = measurement)", \
     datafile index 0 using 2:3 with points pt 7 ps 1.6 lc rgb "#e15759" title "op classes", \
     datafile index 0 using 2:3:1 with labels left offset char 0.8,0.7 font ",11" noenhanced \
         notitle, \
     datafile index 1 using 2:3 with points pt 5 ps 2 lc rgb "#1f78b4" title "step", \
     datafile index 1 using 2:3:1 with labels center offset char 0,-1.4 font ",11" notitle
