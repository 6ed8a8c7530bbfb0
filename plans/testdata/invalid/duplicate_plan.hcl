# want: 4:1 Duplicate plan block
plan "one" {}

plan "two" {}
