package words

// Language is one class of the task: a language whose hunspell dictionary a Debian package
// installs as Dir/<Dictionary>.dic with its affix file Dir/<Dictionary>.aff.
type Language struct {
	Code, Name string
	// Package is the Debian package that installs the dictionary and its copyright file
	// /usr/share/doc/<Package>/copyright.
	Package    string
	Dictionary string
	// stanza is the "Files:" pattern of the dictionary in a copyright file that covers several
	// (Debian's libreoffice-dictionaries packages), "" when the "Files: *" stanza covers it.
	stanza string
	// licence is the licence of a package whose copyright file is not machine-readable
	// (DEP-5), as that file states it; "" for a DEP-5 file, whose stanza names it.
	licence string
}

// Languages are the task's 20 classes, in label order: languages written in the Latin alphabet,
// with close pairs (Danish and Norwegian Bokmål, Czech and Slovak, Croatian and Slovenian) among
// them.
var Languages = []Language{
	{Code: "en", Name: "English", Package: "hunspell-en-us", Dictionary: "en_US",
		licence: "SCOWL (Kevin Atkinson and others): permission to use, copy, modify, distribute and sell with the notice"},
	{Code: "de", Name: "German", Package: "hunspell-de-de", Dictionary: "de_DE"},
	{Code: "fr", Name: "French", Package: "hunspell-fr", Dictionary: "fr"},
	{Code: "es", Name: "Spanish", Package: "hunspell-es", Dictionary: "es_ES", stanza: "dictionaries/es/*"},
	{Code: "it", Name: "Italian", Package: "hunspell-it", Dictionary: "it_IT", stanza: "dictionaries/it_IT/*"},
	{Code: "pt", Name: "Portuguese", Package: "hunspell-pt-pt", Dictionary: "pt_PT", stanza: "dictionaries/pt_PT/*"},
	{Code: "nl", Name: "Dutch", Package: "hunspell-nl", Dictionary: "nl",
		licence: "OpenTaal: BSD or Creative Commons Attribution 3.0, at the user's choice"},
	{Code: "sv", Name: "Swedish", Package: "hunspell-sv", Dictionary: "sv_SE", stanza: "dictionaries/sv_SE/*"},
	{Code: "da", Name: "Danish", Package: "hunspell-da", Dictionary: "da_DK", stanza: "dictionaries/da_DK/*"},
	{Code: "nb", Name: "Norwegian Bokmål", Package: "hunspell-no", Dictionary: "nb_NO", stanza: "dictionaries/no/*"},
	{Code: "pl", Name: "Polish", Package: "hunspell-pl", Dictionary: "pl_PL", stanza: "dictionaries/pl_PL/*"},
	{Code: "cs", Name: "Czech", Package: "hunspell-cs", Dictionary: "cs_CZ", stanza: "dictionaries/cs_CZ/*"},
	{Code: "sk", Name: "Slovak", Package: "hunspell-sk", Dictionary: "sk_SK", stanza: "dictionaries/sk_SK/*"},
	{Code: "sl", Name: "Slovenian", Package: "hunspell-sl", Dictionary: "sl_SI", stanza: "dictionaries/sl_SI/*"},
	{Code: "hr", Name: "Croatian", Package: "hunspell-hr", Dictionary: "hr_HR", stanza: "dictionaries/hr_HR/*"},
	{Code: "ro", Name: "Romanian", Package: "hunspell-ro", Dictionary: "ro_RO", stanza: "dictionaries/ro/*"},
	{Code: "hu", Name: "Hungarian", Package: "hunspell-hu", Dictionary: "hu_HU", stanza: "dictionaries/hu_HU/*"},
	{Code: "tr", Name: "Turkish", Package: "hunspell-tr", Dictionary: "tr_TR", stanza: "dictionaries/tr_TR/*"},
	{Code: "lt", Name: "Lithuanian", Package: "hunspell-lt", Dictionary: "lt_LT", stanza: "dictionaries/lt_LT/*"},
	{Code: "lv", Name: "Latvian", Package: "hunspell-lv", Dictionary: "lv_LV"},
}

// Packages returns the Debian packages of Languages, in order: what `apt-get install` needs for
// the task.
func Packages() []string {
	p := make([]string, len(Languages))
	for k, l := range Languages {
		p[k] = l.Package
	}
	return p
}
