# Shared by the CI container scripts (sourced).

# image_or_stand_in <official image> <stand-in name> <command that builds the stand-in…>
# Prints the image to use: a stand-in built earlier, else the official image if it can be pulled, else the
# stand-in, built now (this project's machines reach no image registry). Progress goes to stderr.
image_or_stand_in() {
  local official=$1 stand_in=$2
  shift 2
  if podman image exists "$stand_in"; then
    echo "$stand_in"
  elif timeout 300 podman pull -q "$official" >/dev/null 2>&1; then
    echo "$official"
  else
    echo "$official cannot be pulled here: building the stand-in $stand_in (once)" >&2
    "$@" >&2 || return 1
    echo "$stand_in"
  fi
}
