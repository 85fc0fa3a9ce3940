# memory.gp - memory per GPU against the size of the tensor-parallel group: the grid side q for
# 2-D, 2.5-D and 3-D, the group size T for 1-D; one line per mode, and the device memory
# (simpar plot memory SWEEP.csv -o FILE.png|FILE.svg).
#
# simpar sets, in a file of assignments gnuplot runs before this script (app/plot/plot.c):
#   datafile    one block per mode, x ascending: x min_mem_GiB (the smallest over the rows that
#               carry a memory figure: status ok, and skipped because they do not fit)
#   outfile     the image to write
#   fmt         "png" or "svg"
#   title_text  the plot's title
#   n_series, series_1, series_2, ...   the modes, in block order
#   capacities  the device memories of the rows, in GiB, separated by spaces ("16" or "40 80")

if (fmt eq "svg") {
    set terminal svg size 1200,800 dynamic font "Helvetica,15" noenhanced
} else {
    set terminal pngcairo size 1200,800 font "Helvetica,13" noenhanced
}
set encoding utf8
set output outfile

mode(i) = value(sprintf("series_%d", i))
# a series is a mode ("3d") or a mode and a model shape ("3d h=8192"): one colour per series then
base(m) = word(m, 1)
shape(m) = words(m) > 1 ? " ".word(m, 2) : ""
series_colour(i) = word("#4e79a7 #f28e2b #59a14f #e15759 #76b7b2 #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac", (i - 1) % 10 + 1)
lc_of(i) = words(mode(i)) > 1 ? series_colour(i) : colour(mode(i))
colour(m) = m eq "1d" ? "#4e79a7" : m eq "2d" ? "#f28e2b" : m eq "2.5d" ? "#59a14f" : \
            m eq "3d" ? "#e15759" : "#76b7b2"
marker(m) = m eq "1d" ? 7 : m eq "2d" ? 5 : m eq "2.5d" ? 9 : m eq "3d" ? 11 : 13
legend(m) = m eq "1d" ? "1-D (x = T)" : m eq "2d" ? "2-D (x = q)" : \
            m eq "2.5d" ? "2.5-D (x = q)" : m eq "3d" ? "3-D (x = q)" : m." (x = q)"
cap(j) = word(capacities, j) + 0

# the title from the picture's left edge, above the plot: centred over the plot area beside
# an outside key, a long title ran off the picture's left edge
set tmargin 3.5
set label 9999 title_text at screen 0.01, graph 1 offset 0, 2 left font ",15" front
set logscale x 2
set logscale y
set format x "%g"
set format y "%g"
set ytics add (0.02, 0.05, 0.2, 0.5, 2, 5, 20, 50, 200, 500, 2000, 5000)
set xlabel "tensor-parallel size: grid side q (2-D q×q, 2.5-D q×q×d, 3-D q×q×q) or group size T (1-D)"
set ylabel "memory per GPU (GiB), best configuration"
set grid xtics ytics mytics lc rgb "#dddddd"
set key outside right top vertical box samplen 2 reverse Left
set offsets graph 0.03, graph 0.03, 0, 0
do for [j=1:words(capacities)] {
    # in the shaded region's top left corner, clear of the dashed line and the data
    set label j sprintf("shaded, above the dashed line: does not fit in %g GiB", cap(j)) \
        at graph 0.02, graph 0.97 offset 0, -1.2 * (j - 1) textcolor rgb "#b00000" front
    set object j rect from graph 0, first cap(j) to graph 1, graph 1 \
        fc rgb "#fbe3e3" fs solid 0.5 noborder behind
}
plot for [j=1:words(capacities)] cap(j) with lines dt 2 lw 2 lc rgb "#b00000" \
         title sprintf("device memory (%g GiB)", cap(j)), \
     for [i=1:n_series] datafile index (i-1) using 1:2 with linespoints lw 2.5 ps 1.4 \
         pt marker(base(mode(i))) lc rgb lc_of(i) title legend(base(mode(i))).shape(mode(i))
