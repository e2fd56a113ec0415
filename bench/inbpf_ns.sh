# Sourced by bench scripts: inbpf_ns FILE prints the query program's in-BPF ns per event seen
# from an `ebq explain --analyze` output (query program ms / events seen).
inbpf_ns() {
  local ms ev
  ms=$(grep 'query program' "$1" | head -1 | sed -E 's/.* runs, ([0-9.]+) ms in BPF.*/\1/')
  ev=$(grep -E '^  events' "$1" | sed -E 's/ *events +([0-9]+) seen.*/\1/')
  echo "$ms $ev" | awk '{printf "%.1f", $1*1e6/$2}'
}
