# Checks the target lines of make bench's report (scripts/bench.sh):
#   awk -v want=N -f scripts/bench-targets.awk REPORT
# Every line with "(target <= X)" or "(target >= X)" is checked: the
# figure is the last number-like word before "(target" (a unit word may
# follow it); NaN or inf there, or no number at all, is a miss named as
# such, never the number printed before it. A line that reports no steady
# state misses too, and so does a report with fewer than `want` target
# lines (a bench that did not report). Prints the misses and exits 1 if
# any.
    /no steady state/ { miss[++m] = $0 }
    /\(target (<=|>=) [0-9.]+/ {
        n++
        head = substr($0, 1, index($0, "(target") - 1)
        # The figure is the last number-like word before "(target" (a
        # unit word may follow it); NaN or inf there, or no number at all,
        # is a broken measurement, never the number printed before it.
        k = split(head, w, /[ \t:=,(]+/); v = ""; bad = ""
        for (i = k; i >= 1; i--) {
            x = tolower(w[i]); sub(/[x%]$/, "", x)
            if (x ~ /^[-+]?(nan|inf|infinity)$/) { bad = w[i]; break }
            if (x ~ /^[-+]?[0-9]*\.?[0-9]+$/) { v = x; break }
        }
        if (bad != "") { miss[++m] = $0 " [not a number: " bad "]"; next }
        if (v == "") { miss[++m] = $0 " [no figure]"; next }
        t = substr($0, index($0, "(target") + 8)
        split(t, tw, /[ ;)]+/); op = tw[1]; lim = tw[2]
        ok = (v != "") && ((op == "<=" && v + 0 <= lim + 0) || (op == ">=" && v + 0 >= lim + 0))
        if (!ok) miss[++m] = $0
    }
    END {
        if (n < want) miss[++m] = sprintf("only %d of %d targets reported", n, want)
        for (i = 1; i <= m; i++) printf "  MISSED: %s\n", miss[i]
        if (m) { printf "  %d target(s) missed\n", m; exit 1 }
        printf "  all %d targets met\n", n
    }
