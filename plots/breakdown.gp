# breakdown.gp - where the step goes: one horizontal stacked bar per configuration, the first
# (best) at the top (simpar plot breakdown SWEEP.csv|PREDICT.json|VALIDATE.json -o FILE).
#
# simpar sets, in a file of assignments gnuplot runs before this script (app/plot/plot.c):
#   datafile    a line per bar: "label" step_s part_1 ... part_n (seconds; the parts add up to
#               the step, "other" being what the named parts leave)
#   outfile     the image to write
#   fmt         "png" or "svg"
#   title_text  the plot's title
#   n_bars      the number of bars
#   ylabel_text what the bar labels are
#   n_series, series_1, series_2, ...   the parts, in column order (columns 3, 4, ...)

height = n_bars * 44 + 260
height = height < 560 ? 560 : height
if (fmt eq "svg") {
    set terminal svg size 1300,height dynamic font "Helvetica,15" noenhanced
} else {
    set terminal pngcairo size 1300,height font "Helvetica,13" noenhanced
}
set encoding utf8
set output outfile

part(i) = value(sprintf("series_%d", i))
colour(p) = p eq "compute" ? "#59a14f" : p eq "TP comm. intra-node" ? "#f1ce63" : \
            p eq "TP comm. inter-node" ? "#e15759" : p eq "pipeline bubble" ? "#bab0ac" : \
            p eq "pipeline p2p" ? "#b07aa1" : p eq "DP comm." ? "#4e79a7" : \
            p eq "optimizer" ? "#9c755f" : "#dddddd"
left(i) = sum [j=1:i-1] column(j + 2)

# the title from the picture's left edge, above the plot: centred over the plot area beside
# an outside key, a long title ran off the picture's left edge
set tmargin 3.5
set label 9999 title_text at screen 0.01, graph 1 offset 0, 2 left font ",15" front
set xlabel "time per training step (s)"
set ylabel ylabel_text
set yrange [n_bars - 0.5:-0.5]
set xrange [0:*]
set offsets 0, graph 0.12, 0, 0
set ytics scale 0
set grid xtics mxtics lc rgb "#dddddd"
set mxtics
set key outside right top vertical box samplen 1.5 reverse Left
set style fill solid 0.95 border lc rgb "#ffffff"
plot for [i=1:n_series] datafile using (left(i) + column(i + 2) / 2):0:(column(i + 2) / 2):(0.36):ytic(1) \
         with boxxyerror lc rgb colour(part(i)) title part(i), \
     datafile using 2:0:(sprintf(" %.3g s", $2)) with labels left font ",11" notitle
