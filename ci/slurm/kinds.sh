# Reads ci/slurm/kinds.tsv (sourced by submit.sh and nightly-array.sh): kinds_load FILE fills
# KIND, PARTITION, CONSTRAINT, GRES and TIME_LIMIT (arrays, one entry per row; "" for "-"), or
# prints one line naming FILE:LINE and what was expected and returns 2.
kinds_load() {
  local file=$1 line n=0 kind partition constraint gres time_limit extra
  KIND=() PARTITION=() CONSTRAINT=() GRES=() TIME_LIMIT=()
  if [ ! -f "$file" ] || [ ! -r "$file" ]; then
    echo "$file: expected a readable kinds table (kind partition constraint gres time_limit per line)" >&2
    return 2
  fi
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    line=${line%%#*}
    [ -z "${line//[[:space:]]/}" ] && continue
    read -r kind partition constraint gres time_limit extra <<<"$line"
    if [ -z "$time_limit" ] || [ -n "$extra" ]; then
      echo "$file:$n: expected 5 columns (kind partition constraint gres time_limit; - for none), is \"$line\"" >&2
      return 2
    fi
    if ! [[ $kind =~ ^[A-Za-z0-9._-]{1,64}$ ]]; then
      echo "$file:$n: kind: expected 1 to 64 of A-Z a-z 0-9 . _ - (it names directories), is \"$kind\"" >&2
      return 2
    fi
    if ! [[ $time_limit =~ ^([0-9]+-)?[0-9]+(:[0-9]{2}){0,2}$ ]]; then
      echo "$file:$n: time_limit: expected a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS), is \"$time_limit\"" >&2
      return 2
    fi
    local k
    for k in "${KIND[@]}"; do
      if [ "$k" = "$kind" ]; then echo "$file:$n: kind: expected a kind no other row has, is \"$kind\"" >&2; return 2; fi
    done
    [ "$partition" = - ] && partition=""
    [ "$constraint" = - ] && constraint=""
    [ "$gres" = - ] && gres=""
    KIND+=("$kind")
    PARTITION+=("$partition")
    CONSTRAINT+=("$constraint")
    GRES+=("$gres")
    TIME_LIMIT+=("$time_limit")
  done <"$file"
  if [ ${#KIND[@]} = 0 ]; then
    echo "$file: expected at least one kind (kind partition constraint gres time_limit), has none" >&2
    return 2
  fi
}
