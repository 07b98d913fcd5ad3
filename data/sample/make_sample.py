"""Build the small English-German sample corpus in this folder.

The corpus consists of

* hand-written sentence pairs (the ``HAND`` table below), and
* pairs generated from hand-written templates.  The templates carry German
  gender, number and case information, so articles, adjective endings and
  verb forms always agree.

Everything is deterministic: the same seed gives the same files.  Run with
Python 3.11 or newer, standard library only::

    python3 data/sample/make_sample.py

The script writes train/val/test .en/.de files next to itself.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

SEED = 20240611
N_TEST = 200
N_VAL = 200
OUT_DIR = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------
# Hand-written sentence pairs: an English line, then its German translation
# on the next line, indented.
# ---------------------------------------------------------------------------

HAND = """
I love machine learning.
    Ich liebe maschinelles Lernen.
Machine learning is a branch of artificial intelligence.
    Maschinelles Lernen ist ein Teilgebiet der künstlichen Intelligenz.
Machine learning needs a lot of data.
    Maschinelles Lernen braucht viele Daten.
The model learns from examples.
    Das Modell lernt aus Beispielen.
We trained the model for three days.
    Wir haben das Modell drei Tage lang trainiert.
The model makes fewer mistakes now.
    Das Modell macht jetzt weniger Fehler.
The training takes about two hours.
    Das Training dauert ungefähr zwei Stunden.
Our model translates English sentences into German.
    Unser Modell übersetzt englische Sätze ins Deutsche.
The translation is not perfect, but it is good.
    Die Übersetzung ist nicht perfekt, aber sie ist gut.
A larger model needs more memory.
    Ein größeres Modell braucht mehr Speicher.
The GPU is much faster than the CPU.
    Die GPU ist viel schneller als die CPU.
We need more training data.
    Wir brauchen mehr Trainingsdaten.
The test data must stay separate.
    Die Testdaten müssen getrennt bleiben.
She explains machine learning to her students.
    Sie erklärt ihren Studenten maschinelles Lernen.
Machine learning is not magic.
    Maschinelles Lernen ist keine Zauberei.
He has been working on machine learning for ten years.
    Er beschäftigt sich seit zehn Jahren mit maschinellem Lernen.
The loss is getting smaller.
    Der Verlust wird kleiner.
The model memorizes the training data.
    Das Modell lernt die Trainingsdaten auswendig.
Every sentence has a translation.
    Jeder Satz hat eine Übersetzung.
The vocabulary contains eight thousand words.
    Das Vokabular enthält achttausend Wörter.
The model reads one sentence after another.
    Das Modell liest einen Satz nach dem anderen.
Neural networks have many parameters.
    Neuronale Netze haben viele Parameter.
Which model is better?
    Welches Modell ist besser?
The results look promising.
    Die Ergebnisse sehen vielversprechend aus.
We evaluate the model on the test set.
    Wir evaluieren das Modell auf dem Testdatensatz.
The BLEU score has improved.
    Der BLEU-Wert hat sich verbessert.
Machine translation has become much better.
    Maschinelle Übersetzung ist viel besser geworden.
Can a computer really understand language?
    Kann ein Computer Sprache wirklich verstehen?
Language is more than a list of words.
    Sprache ist mehr als eine Liste von Wörtern.
The model does not know this word.
    Das Modell kennt dieses Wort nicht.
Rare words are difficult for the model.
    Seltene Wörter sind für das Modell schwierig.
I am learning machine learning in my free time.
    Ich lerne in meiner Freizeit maschinelles Lernen.
My brother works in machine learning.
    Mein Bruder arbeitet im Bereich des maschinellen Lernens.
This course is an introduction to machine learning.
    Dieser Kurs ist eine Einführung in das maschinelle Lernen.
Machine learning models can make mistakes.
    Modelle des maschinellen Lernens können Fehler machen.
The data must be clean before training.
    Die Daten müssen vor dem Training sauber sein.
We split the data into three parts.
    Wir teilen die Daten in drei Teile auf.
The model was trained on a small corpus.
    Das Modell wurde auf einem kleinen Korpus trainiert.
A small corpus is enough for a quick test.
    Ein kleines Korpus reicht für einen schnellen Test.
Attention is an important idea in neural networks.
    Aufmerksamkeit ist eine wichtige Idee in neuronalen Netzen.
The transformer is a popular architecture.
    Der Transformer ist eine beliebte Architektur.
She is writing her thesis on machine translation.
    Sie schreibt ihre Abschlussarbeit über maschinelle Übersetzung.
Artificial intelligence is changing many jobs.
    Künstliche Intelligenz verändert viele Berufe.
I don't trust the model yet.
    Ich vertraue dem Modell noch nicht.
The model gives a different answer every time.
    Das Modell gibt jedes Mal eine andere Antwort.
Please check the translation again.
    Bitte überprüfe die Übersetzung noch einmal.
The computer is still training the model.
    Der Computer trainiert das Modell noch.
Training stops after ten epochs.
    Das Training endet nach zehn Epochen.
Data is the fuel of machine learning.
    Daten sind der Treibstoff des maschinellen Lernens.
Good data is more important than a big model.
    Gute Daten sind wichtiger als ein großes Modell.
We compare two models.
    Wir vergleichen zwei Modelle.
The first model is faster, but the second one is more accurate.
    Das erste Modell ist schneller, aber das zweite ist genauer.
I am reading a paper about language models.
    Ich lese einen Fachartikel über Sprachmodelle.
Language models predict the next word.
    Sprachmodelle sagen das nächste Wort vorher.
The model has learned a lot.
    Das Modell hat viel gelernt.
Who trained this model?
    Wer hat dieses Modell trainiert?
The model cannot translate names correctly.
    Das Modell kann Namen nicht richtig übersetzen.
Machine learning helps doctors with diagnoses.
    Maschinelles Lernen hilft Ärzten bei Diagnosen.
I love working with data.
    Ich arbeite sehr gern mit Daten.
I love languages and computers.
    Ich liebe Sprachen und Computer.
I love machine learning and statistics.
    Ich liebe maschinelles Lernen und Statistik.
Why do you love machine learning?
    Warum liebst du maschinelles Lernen?
Machine learning is my favorite subject.
    Maschinelles Lernen ist mein Lieblingsfach.
I have been interested in machine learning for a long time.
    Ich interessiere mich schon lange für maschinelles Lernen.
The translation of this sentence is wrong.
    Die Übersetzung dieses Satzes ist falsch.
Translating poems is very hard.
    Gedichte zu übersetzen ist sehr schwer.
Every language has its own rules.
    Jede Sprache hat ihre eigenen Regeln.
German has three grammatical genders.
    Im Deutschen gibt es drei grammatische Geschlechter.
German nouns are always capitalized.
    Deutsche Substantive werden immer großgeschrieben.
The model that we trained yesterday is better.
    Das Modell, das wir gestern trainiert haben, ist besser.
The data that we collected is incomplete.
    Die Daten, die wir gesammelt haben, sind unvollständig.
The sentence that the model translated is correct.
    Der Satz, den das Modell übersetzt hat, ist korrekt.
If the model is too slow, we need a better GPU.
    Wenn das Modell zu langsam ist, brauchen wir eine bessere GPU.
How many languages does the model support?
    Wie viele Sprachen unterstützt das Modell?
The model translates short sentences well.
    Das Modell übersetzt kurze Sätze gut.
Long sentences are still a problem.
    Lange Sätze sind immer noch ein Problem.
I love machine learning because it is creative.
    Ich liebe maschinelles Lernen, weil es kreativ ist.
My computer is very slow today.
    Mein Computer ist heute sehr langsam.
Please restart your computer.
    Bitte starte deinen Computer neu.
The computer does not start.
    Der Computer startet nicht.
Where is the power button?
    Wo ist der Einschaltknopf?
The screen is too dark.
    Der Bildschirm ist zu dunkel.
I forgot my password.
    Ich habe mein Passwort vergessen.
Choose a strong password.
    Wähle ein sicheres Passwort.
The internet is down again.
    Das Internet ist schon wieder ausgefallen.
The Wi-Fi password is on the back of the router.
    Das WLAN-Passwort steht auf der Rückseite des Routers.
Can you send me the link?
    Kannst du mir den Link schicken?
I will send you the file tomorrow.
    Ich schicke dir die Datei morgen.
The file is too large for an email.
    Die Datei ist zu groß für eine E-Mail.
Did you save the document?
    Hast du das Dokument gespeichert?
The program crashed again.
    Das Programm ist schon wieder abgestürzt.
The app needs an update.
    Die App braucht ein Update.
Updates are important for security.
    Updates sind wichtig für die Sicherheit.
My phone battery is almost empty.
    Der Akku meines Handys ist fast leer.
I have no signal here.
    Ich habe hier keinen Empfang.
Call me when you arrive.
    Ruf mich an, wenn du ankommst.
She sent me a text message.
    Sie hat mir eine SMS geschickt.
I take a lot of photos with my phone.
    Ich mache viele Fotos mit meinem Handy.
The camera on this phone is excellent.
    Die Kamera dieses Handys ist ausgezeichnet.
He spends too much time on his phone.
    Er verbringt zu viel Zeit am Handy.
The website loads very slowly.
    Die Website lädt sehr langsam.
I found the answer on the internet.
    Ich habe die Antwort im Internet gefunden.
Search engines help us find information.
    Suchmaschinen helfen uns, Informationen zu finden.
I write code every day.
    Ich schreibe jeden Tag Code.
Python is a popular programming language.
    Python ist eine beliebte Programmiersprache.
This function returns a list.
    Diese Funktion gibt eine Liste zurück.
The variable is not defined.
    Die Variable ist nicht definiert.
There is a bug in line twelve.
    In Zeile zwölf ist ein Fehler.
I fixed the bug yesterday.
    Ich habe den Fehler gestern behoben.
All tests pass now.
    Jetzt sind alle Tests erfolgreich.
The build failed.
    Der Build ist fehlgeschlagen.
Please write a test for this function.
    Bitte schreib einen Test für diese Funktion.
The code is easy to read.
    Der Code ist leicht zu lesen.
Comments make the code easier to understand.
    Kommentare machen den Code verständlicher.
We use Git for version control.
    Wir verwenden Git zur Versionskontrolle.
He uploaded his changes to the server.
    Er hat seine Änderungen auf den Server hochgeladen.
The server is in a data center in Frankfurt.
    Der Server steht in einem Rechenzentrum in Frankfurt.
Our database contains millions of records.
    Unsere Datenbank enthält Millionen von Datensätzen.
The data is stored in the cloud.
    Die Daten werden in der Cloud gespeichert.
Back up your data regularly.
    Sichere deine Daten regelmäßig.
I lost all my data.
    Ich habe alle meine Daten verloren.
The data comes from many different sources.
    Die Daten stammen aus vielen verschiedenen Quellen.
We analyze the data with Python.
    Wir analysieren die Daten mit Python.
The chart shows the results.
    Das Diagramm zeigt die Ergebnisse.
Open the terminal and type the command.
    Öffne das Terminal und gib den Befehl ein.
The command line is very powerful.
    Die Kommandozeile ist sehr mächtig.
Install the package with pip.
    Installiere das Paket mit pip.
A key is missing from the keyboard.
    An der Tastatur fehlt eine Taste.
My laptop is getting very hot.
    Mein Laptop wird sehr heiß.
The fan is very loud.
    Der Lüfter ist sehr laut.
I need a new hard drive.
    Ich brauche eine neue Festplatte.
The printer is out of paper.
    Der Drucker hat kein Papier mehr.
Can you print this page for me?
    Kannst du diese Seite für mich drucken?
Anyone may use open-source software for free.
    Open-Source-Software darf jeder kostenlos benutzen.
Anyone can read the source code.
    Jeder kann den Quellcode lesen.
The documentation is very helpful.
    Die Dokumentation ist sehr hilfreich.
I read the manual first.
    Ich lese zuerst die Anleitung.
The computer is connected to the internet.
    Der Computer ist mit dem Internet verbunden.
My grandmother uses a tablet now.
    Meine Großmutter benutzt jetzt ein Tablet.
She video calls her grandchildren every Sunday.
    Sie macht jeden Sonntag einen Videoanruf mit ihren Enkeln.
Turn off your phone during the film.
    Schalte dein Handy während des Films aus.
The video is still loading.
    Das Video lädt noch.
I downloaded the new version.
    Ich habe die neue Version heruntergeladen.
This computer has sixteen gigabytes of memory.
    Dieser Computer hat sechzehn Gigabyte Arbeitsspeicher.
The computer is older than my son.
    Der Computer ist älter als mein Sohn.
Computers used to be very expensive.
    Früher waren Computer sehr teuer.
My first computer had no hard drive.
    Mein erster Computer hatte keine Festplatte.
The email is in the spam folder.
    Die E-Mail ist im Spam-Ordner.
I get too many emails.
    Ich bekomme zu viele E-Mails.
Please answer my email.
    Bitte beantworte meine E-Mail.
The meeting is online today.
    Das Meeting findet heute online statt.
My microphone does not work.
    Mein Mikrofon funktioniert nicht.
Can you hear me?
    Kannst du mich hören?
I can't see your screen.
    Ich kann deinen Bildschirm nicht sehen.
Share your screen, please.
    Teile bitte deinen Bildschirm.
Technology changes very quickly.
    Die Technik verändert sich sehr schnell.
A robot cleans our floor.
    Ein Roboter putzt unseren Boden.
Smartphones have changed our lives.
    Smartphones haben unser Leben verändert.
This app translates menus in restaurants.
    Diese App übersetzt Speisekarten in Restaurants.
The translation app helps me on vacation.
    Die Übersetzungs-App hilft mir im Urlaub.
The computer translates the text in a few seconds.
    Der Computer übersetzt den Text in wenigen Sekunden.
Is this translation correct?
    Ist diese Übersetzung richtig?
The program runs on Linux and Windows.
    Das Programm läuft unter Linux und Windows.
The script takes ten minutes.
    Das Skript braucht zehn Minuten.
The file was deleted by mistake.
    Die Datei wurde aus Versehen gelöscht.
The download is complete.
    Der Download ist abgeschlossen.
My computer has a virus.
    Mein Computer hat einen Virus.
Never click on strange links.
    Klick nie auf seltsame Links.
The company protects the data of its customers.
    Die Firma schützt die Daten ihrer Kunden.
Data protection is very important in Germany.
    Datenschutz ist in Deutschland sehr wichtig.
Who has access to this data?
    Wer hat Zugriff auf diese Daten?
The spreadsheet has too many columns.
    Die Tabelle hat zu viele Spalten.
I am learning to program.
    Ich lerne programmieren.
My daughter builds small robots.
    Meine Tochter baut kleine Roboter.
The developers are working on a new version.
    Die Entwickler arbeiten an einer neuen Version.
The new version comes out next month.
    Die neue Version erscheint nächsten Monat.
I need a computer that is faster.
    Ich brauche einen Computer, der schneller ist.
If you have questions, write me an email.
    Wenn du Fragen hast, schreib mir eine E-Mail.
My family is quite big.
    Meine Familie ist ziemlich groß.
I have two brothers and a sister.
    Ich habe zwei Brüder und eine Schwester.
My parents live in a small village.
    Meine Eltern wohnen in einem kleinen Dorf.
My grandmother tells wonderful stories.
    Meine Großmutter erzählt wunderbare Geschichten.
We visit my grandparents every summer.
    Wir besuchen meine Großeltern jeden Sommer.
My brother is two years older than me.
    Mein Bruder ist zwei Jahre älter als ich.
My sister has just had a baby.
    Meine Schwester hat gerade ein Baby bekommen.
The baby sleeps a lot.
    Das Baby schläft viel.
Our children go to the same school.
    Unsere Kinder gehen auf dieselbe Schule.
My mother works at a hospital.
    Meine Mutter arbeitet in einem Krankenhaus.
My uncle has a farm in Bavaria.
    Mein Onkel hat einen Bauernhof in Bayern.
Tomorrow we are celebrating my grandfather's birthday.
    Morgen feiern wir den Geburtstag meines Großvaters.
My sister is getting married in June.
    Meine Schwester heiratet im Juni.
The whole family eats together in the evening.
    Abends isst die ganze Familie zusammen.
My son would like a dog.
    Mein Sohn wünscht sich einen Hund.
My daughter is learning to ride a bike.
    Meine Tochter lernt Fahrrad fahren.
The children are playing in the garden.
    Die Kinder spielen im Garten.
My parents have been married for forty years.
    Meine Eltern sind seit vierzig Jahren verheiratet.
I call my mother every weekend.
    Ich rufe meine Mutter jedes Wochenende an.
My brother and I look very similar.
    Mein Bruder und ich sehen uns sehr ähnlich.
Our dog is part of the family.
    Unser Hund gehört zur Familie.
My grandparents do not have a computer.
    Meine Großeltern haben keinen Computer.
My little brother plays video games all day.
    Mein kleiner Bruder spielt den ganzen Tag Videospiele.
My sister lives abroad.
    Meine Schwester lebt im Ausland.
We often talk on the phone.
    Wir telefonieren oft.
My aunt sends us a card every year.
    Meine Tante schickt uns jedes Jahr eine Karte.
Family is very important to me.
    Die Familie ist mir sehr wichtig.
My parents are visiting us next week.
    Meine Eltern besuchen uns nächste Woche.
My husband works from home.
    Mein Mann arbeitet von zu Hause.
Our neighbors have three children.
    Unsere Nachbarn haben drei Kinder.
The kids are already asleep.
    Die Kinder schlafen schon.
I love my family.
    Ich liebe meine Familie.
I love my grandparents.
    Ich liebe meine Großeltern.
The man who lives next door is a pilot.
    Der Mann, der nebenan wohnt, ist Pilot.
This is the woman whose car was stolen.
    Das ist die Frau, deren Auto gestohlen wurde.
I am hungry.
    Ich habe Hunger.
Are you thirsty?
    Hast du Durst?
What would you like to drink?
    Was möchtest du trinken?
I'd like a glass of water, please.
    Ich hätte gern ein Glas Wasser, bitte.
The soup is too salty.
    Die Suppe ist zu salzig.
This cake tastes wonderful.
    Dieser Kuchen schmeckt wunderbar.
We eat fish on Fridays.
    Freitags essen wir Fisch.
I don't eat meat.
    Ich esse kein Fleisch.
She is a vegetarian.
    Sie ist Vegetarierin.
Breakfast is ready.
    Das Frühstück ist fertig.
I drink two cups of coffee every morning.
    Ich trinke jeden Morgen zwei Tassen Kaffee.
Do you take milk in your tea?
    Nimmst du Milch in den Tee?
The bread is still warm.
    Das Brot ist noch warm.
Can you pass me the salt?
    Kannst du mir das Salz geben?
We need eggs, butter and flour.
    Wir brauchen Eier, Butter und Mehl.
The restaurant on the corner is very good.
    Das Restaurant an der Ecke ist sehr gut.
The check, please.
    Die Rechnung, bitte.
We would like to order.
    Wir möchten bestellen.
I'll have the pasta with tomato sauce.
    Ich nehme die Nudeln mit Tomatensoße.
The waiter brings the menu.
    Der Kellner bringt die Speisekarte.
My father makes the best pancakes.
    Mein Vater macht die besten Pfannkuchen.
Dinner is at seven.
    Das Abendessen gibt es um sieben.
I love fresh strawberries.
    Ich liebe frische Erdbeeren.
I love cooking for my friends.
    Ich koche sehr gern für meine Freunde.
The vegetables come from our garden.
    Das Gemüse kommt aus unserem Garten.
This apple is sour.
    Dieser Apfel ist sauer.
The milk is in the fridge.
    Die Milch ist im Kühlschrank.
The fridge is empty.
    Der Kühlschrank ist leer.
We are having a barbecue on Saturday.
    Am Samstag grillen wir.
Lunch was delicious.
    Das Mittagessen war köstlich.
I usually have lunch at noon.
    Ich esse normalerweise mittags.
Would you like another piece of cake?
    Möchtest du noch ein Stück Kuchen?
No, thank you, I'm full.
    Nein danke, ich bin satt.
Enjoy your meal!
    Guten Appetit!
The bakery opens at six.
    Die Bäckerei öffnet um sechs.
I buy fresh bread every morning.
    Ich kaufe jeden Morgen frisches Brot.
Chocolate makes me happy.
    Schokolade macht mich glücklich.
Is this dish spicy?
    Ist dieses Gericht scharf?
I'm allergic to nuts.
    Ich bin allergisch gegen Nüsse.
We eat too much sugar.
    Wir essen zu viel Zucker.
Water is healthier than juice.
    Wasser ist gesünder als Saft.
Do you know the restaurant where we ate last year?
    Kennst du das Restaurant, in dem wir letztes Jahr gegessen haben?
What's the weather like today?
    Wie ist das Wetter heute?
The sun is shining.
    Die Sonne scheint.
It's going to rain this afternoon.
    Heute Nachmittag wird es regnen.
Take an umbrella with you.
    Nimm einen Regenschirm mit.
The wind is very strong today.
    Der Wind ist heute sehr stark.
It snowed all night.
    Es hat die ganze Nacht geschneit.
The roads are icy.
    Die Straßen sind glatt.
The summer was very hot this year.
    Der Sommer war dieses Jahr sehr heiß.
I like autumn best.
    Der Herbst gefällt mir am besten.
In spring everything turns green.
    Im Frühling wird alles grün.
A thunderstorm is coming.
    Ein Gewitter zieht auf.
The sky is blue and clear.
    Der Himmel ist blau und klar.
It is twenty degrees outside.
    Draußen sind es zwanzig Grad.
The weather forecast was wrong again.
    Die Wettervorhersage lag schon wieder falsch.
We had a lot of rain in April.
    Im April hatten wir viel Regen.
I'm cold.
    Mir ist kalt.
It's too hot to work.
    Es ist zu heiß zum Arbeiten.
The snow is melting.
    Der Schnee schmilzt.
When it rains, I stay at home.
    Wenn es regnet, bleibe ich zu Hause.
When does the next train leave?
    Wann fährt der nächste Zug?
The train is twenty minutes late.
    Der Zug hat zwanzig Minuten Verspätung.
I have to change trains in Frankfurt.
    Ich muss in Frankfurt umsteigen.
Where is the train station?
    Wo ist der Bahnhof?
Is this seat free?
    Ist dieser Platz frei?
I'd like a ticket to Hamburg.
    Ich hätte gern eine Fahrkarte nach Hamburg.
A return ticket, please.
    Eine Rückfahrkarte, bitte.
Our flight was cancelled.
    Unser Flug wurde gestrichen.
Don't forget your passport.
    Vergiss deinen Reisepass nicht.
We booked a hotel near the beach.
    Wir haben ein Hotel in der Nähe des Strandes gebucht.
The room has a view of the sea.
    Das Zimmer hat Blick aufs Meer.
Breakfast is included.
    Das Frühstück ist inklusive.
How do I get to the museum?
    Wie komme ich zum Museum?
Go straight ahead and then turn left.
    Gehen Sie geradeaus und dann links.
The museum is closed on Mondays.
    Das Museum ist montags geschlossen.
We took a lot of pictures.
    Wir haben viele Fotos gemacht.
My suitcase is too heavy.
    Mein Koffer ist zu schwer.
I lost my luggage.
    Ich habe mein Gepäck verloren.
We are going on vacation next week.
    Nächste Woche fahren wir in den Urlaub.
Where did you spend your vacation?
    Wo hast du deinen Urlaub verbracht?
We spent two weeks in Portugal.
    Wir haben zwei Wochen in Portugal verbracht.
The old town is beautiful.
    Die Altstadt ist wunderschön.
I always travel by train.
    Ich reise immer mit dem Zug.
The bus stop is around the corner.
    Die Bushaltestelle ist um die Ecke.
The trip takes about four hours.
    Die Fahrt dauert etwa vier Stunden.
Excuse me, is this the way to the airport?
    Entschuldigung, ist das der Weg zum Flughafen?
The taxi is waiting outside.
    Das Taxi wartet draußen.
We rented a car for a week.
    Wir haben für eine Woche ein Auto gemietet.
The traffic is terrible today.
    Der Verkehr ist heute furchtbar.
I prefer to sit by the window.
    Ich sitze lieber am Fenster.
We arrived late in the evening.
    Wir sind spät am Abend angekommen.
The hotel is fully booked.
    Das Hotel ist ausgebucht.
Have a good trip!
    Gute Reise!
I've never been to Japan.
    Ich war noch nie in Japan.
Next year we want to go to Norway.
    Nächstes Jahr wollen wir nach Norwegen fahren.
How much is this?
    Wie viel kostet das?
That is too expensive for me.
    Das ist mir zu teuer.
Do you have this shirt in blue?
    Haben Sie dieses Hemd in Blau?
Can I try on these pants?
    Kann ich diese Hose anprobieren?
The pants are too long.
    Die Hose ist zu lang.
I'm just looking, thank you.
    Ich schaue nur, danke.
Can I pay by card?
    Kann ich mit Karte bezahlen?
We only take cash.
    Wir nehmen nur Bargeld.
The shop closes at eight.
    Das Geschäft schließt um acht.
The supermarket is open on Saturdays.
    Der Supermarkt hat samstags geöffnet.
Shops are closed on Sundays.
    Sonntags sind die Geschäfte geschlossen.
I need a bag, please.
    Ich brauche bitte eine Tüte.
I bought a present for my mother.
    Ich habe ein Geschenk für meine Mutter gekauft.
The shoes are on sale.
    Die Schuhe sind im Angebot.
I ordered a new jacket online.
    Ich habe online eine neue Jacke bestellt.
The package arrives tomorrow.
    Das Paket kommt morgen an.
I want to return this sweater.
    Ich möchte diesen Pullover zurückgeben.
Do you have a receipt?
    Haben Sie einen Kassenbon?
The market has fresh fruit and vegetables.
    Auf dem Markt gibt es frisches Obst und Gemüse.
Write a shopping list.
    Schreib eine Einkaufsliste.
We forgot the milk.
    Wir haben die Milch vergessen.
Is there a pharmacy nearby?
    Gibt es hier in der Nähe eine Apotheke?
I'm looking for a bookshop.
    Ich suche eine Buchhandlung.
The line at the checkout is long.
    Die Schlange an der Kasse ist lang.
Everything is twenty percent cheaper today.
    Heute ist alles zwanzig Prozent billiger.
This dress fits perfectly.
    Dieses Kleid passt perfekt.
Which size do you need?
    Welche Größe brauchen Sie?
I love going to the flea market.
    Ich gehe sehr gern auf den Flohmarkt.
I start work at nine.
    Ich fange um neun an zu arbeiten.
I have a meeting at ten.
    Ich habe um zehn ein Meeting.
My boss is on vacation.
    Meine Chefin ist im Urlaub.
We work in a small team.
    Wir arbeiten in einem kleinen Team.
The office is on the third floor.
    Das Büro ist im dritten Stock.
I work from home twice a week.
    Ich arbeite zweimal pro Woche von zu Hause.
The deadline is on Friday.
    Die Frist endet am Freitag.
I have a lot of work today.
    Ich habe heute viel Arbeit.
Can we postpone the meeting?
    Können wir das Meeting verschieben?
She got a new job.
    Sie hat eine neue Stelle bekommen.
He is looking for work.
    Er sucht Arbeit.
The job interview went well.
    Das Vorstellungsgespräch lief gut.
My colleagues are very friendly.
    Meine Kollegen sind sehr freundlich.
We have lunch together in the canteen.
    Wir essen zusammen in der Kantine zu Mittag.
I'm writing the report right now.
    Ich schreibe gerade den Bericht.
Please send me the report by Thursday.
    Bitte schick mir den Bericht bis Donnerstag.
The project is almost finished.
    Das Projekt ist fast fertig.
The company has two hundred employees.
    Die Firma hat zweihundert Mitarbeiter.
I'm taking a day off tomorrow.
    Morgen nehme ich mir einen Tag frei.
He works the night shift.
    Er arbeitet in der Nachtschicht.
My contract ends in March.
    Mein Vertrag endet im März.
We are hiring new developers.
    Wir stellen neue Entwickler ein.
She is responsible for the budget.
    Sie ist für das Budget verantwortlich.
The presentation starts in five minutes.
    Die Präsentation beginnt in fünf Minuten.
I'm tired after work.
    Nach der Arbeit bin ich müde.
The printer in our office is broken again.
    Der Drucker in unserem Büro ist schon wieder kaputt.
I earn enough money.
    Ich verdiene genug Geld.
We need to talk about the plan.
    Wir müssen über den Plan sprechen.
I agree with you.
    Ich bin deiner Meinung.
That is a good idea.
    Das ist eine gute Idee.
Let's take a short break.
    Lass uns eine kurze Pause machen.
The coffee machine is empty again.
    Die Kaffeemaschine ist schon wieder leer.
School starts at eight o'clock.
    Die Schule beginnt um acht Uhr.
My favorite subject is biology.
    Mein Lieblingsfach ist Biologie.
The teacher explains the exercise.
    Die Lehrerin erklärt die Aufgabe.
We have a test tomorrow.
    Morgen schreiben wir einen Test.
I have to do my homework.
    Ich muss meine Hausaufgaben machen.
The homework is easy.
    Die Hausaufgaben sind leicht.
Can you repeat the question?
    Kannst du die Frage wiederholen?
I don't understand this word.
    Ich verstehe dieses Wort nicht.
What does this word mean?
    Was bedeutet dieses Wort?
How do you say "apple" in German?
    Wie sagt man „apple“ auf Deutsch?
The library is open until ten.
    Die Bibliothek ist bis zehn Uhr geöffnet.
I'm studying for my exam.
    Ich lerne für meine Prüfung.
She passed her exam.
    Sie hat ihre Prüfung bestanden.
He failed his driving test.
    Er ist durch die Fahrprüfung gefallen.
The pupils are sitting in the classroom.
    Die Schüler sitzen im Klassenzimmer.
The school holidays start next week.
    Die Ferien beginnen nächste Woche.
My son is in fourth grade.
    Mein Sohn ist in der vierten Klasse.
We are reading a novel in class.
    Wir lesen im Unterricht einen Roman.
Mathematics is not my strength.
    Mathematik ist nicht meine Stärke.
She studies physics in Heidelberg.
    Sie studiert Physik in Heidelberg.
The lecture was boring.
    Die Vorlesung war langweilig.
I'm writing my thesis.
    Ich schreibe meine Abschlussarbeit.
The semester starts in October.
    Das Semester beginnt im Oktober.
I forgot my pencil case.
    Ich habe mein Federmäppchen vergessen.
The children are learning to read and write.
    Die Kinder lernen lesen und schreiben.
Who knows the answer?
    Wer weiß die Antwort?
Learning a language takes time.
    Eine Sprache zu lernen braucht Zeit.
I'm learning German because of my job.
    Ich lerne Deutsch wegen meiner Arbeit.
German grammar is not that hard.
    Die deutsche Grammatik ist gar nicht so schwer.
We practice speaking every day.
    Wir üben jeden Tag das Sprechen.
My teacher corrects my mistakes.
    Meine Lehrerin korrigiert meine Fehler.
The book that I am reading is very long.
    Das Buch, das ich gerade lese, ist sehr lang.
What do you do in your free time?
    Was machst du in deiner Freizeit?
I play the guitar in a band.
    Ich spiele Gitarre in einer Band.
We go hiking in the mountains.
    Wir wandern in den Bergen.
He runs five kilometers every morning.
    Er läuft jeden Morgen fünf Kilometer.
She paints pictures of the sea.
    Sie malt Bilder vom Meer.
My hobby is photography.
    Mein Hobby ist die Fotografie.
I collect old stamps.
    Ich sammle alte Briefmarken.
We play cards on Friday evenings.
    Freitagabends spielen wir Karten.
The soccer game starts at three.
    Das Fußballspiel beginnt um drei.
Our team won the game.
    Unsere Mannschaft hat das Spiel gewonnen.
I'm reading a very exciting book.
    Ich lese gerade ein sehr spannendes Buch.
Have you seen the new film?
    Hast du den neuen Film gesehen?
The film was better than the book.
    Der Film war besser als das Buch.
I listen to music while I cook.
    Ich höre Musik, während ich koche.
She sings in a choir.
    Sie singt in einem Chor.
He knits sweaters for his grandchildren.
    Er strickt Pullover für seine Enkel.
In summer we go swimming in the lake.
    Im Sommer gehen wir im See schwimmen.
I love long walks in the forest.
    Ich liebe lange Spaziergänge im Wald.
My brother builds model railways.
    Mein Bruder baut Modelleisenbahnen.
Chess is harder than it looks.
    Schach ist schwieriger, als es aussieht.
I'm learning to play the piano.
    Ich lerne Klavier spielen.
The concert was fantastic.
    Das Konzert war fantastisch.
We are going to the theater tonight.
    Heute Abend gehen wir ins Theater.
I don't have much free time.
    Ich habe nicht viel Freizeit.
My dog needs a long walk every day.
    Mein Hund braucht jeden Tag einen langen Spaziergang.
I love my garden.
    Ich liebe meinen Garten.
I love rainy Sundays with a good book.
    Ich liebe regnerische Sonntage mit einem guten Buch.
The tomatoes in my garden are finally red.
    Die Tomaten in meinem Garten sind endlich rot.
When I have time, I read a book.
    Wenn ich Zeit habe, lese ich ein Buch.
What time is it?
    Wie spät ist es?
It's half past three.
    Es ist halb vier.
It's a quarter to eight.
    Es ist Viertel vor acht.
I'm sorry I'm late.
    Entschuldigung, dass ich zu spät komme.
We have plenty of time.
    Wir haben viel Zeit.
I'll be back in ten minutes.
    Ich bin in zehn Minuten zurück.
See you tomorrow!
    Bis morgen!
See you next week.
    Bis nächste Woche.
Today is Tuesday.
    Heute ist Dienstag.
My birthday is in May.
    Mein Geburtstag ist im Mai.
The days are getting shorter.
    Die Tage werden kürzer.
I get up at six every day.
    Ich stehe jeden Tag um sechs Uhr auf.
I usually go to bed before midnight.
    Normalerweise gehe ich vor Mitternacht ins Bett.
The shop opens in an hour.
    Das Geschäft öffnet in einer Stunde.
Wait a moment, please.
    Warte bitte einen Moment.
It took three hours.
    Es hat drei Stunden gedauert.
We met ten years ago.
    Wir haben uns vor zehn Jahren kennengelernt.
Yesterday was a long day.
    Gestern war ein langer Tag.
The weekend is finally here.
    Endlich ist Wochenende.
What are you doing this weekend?
    Was machst du dieses Wochenende?
I have no time today.
    Ich habe heute keine Zeit.
A year has twelve months.
    Ein Jahr hat zwölf Monate.
We are meeting at noon.
    Wir treffen uns um zwölf Uhr mittags.
In winter it is already dark at five.
    Im Winter ist es schon um fünf dunkel.
I have been waiting for an hour.
    Ich warte schon seit einer Stunde.
I'll call you when I'm at home.
    Ich rufe dich an, wenn ich zu Hause bin.
The city has a beautiful park.
    Die Stadt hat einen schönen Park.
We live on the second floor.
    Wir wohnen im zweiten Stock.
Our apartment has three rooms.
    Unsere Wohnung hat drei Zimmer.
The kitchen is small but bright.
    Die Küche ist klein, aber hell.
There is a bakery next to our house.
    Neben unserem Haus gibt es eine Bäckerei.
The church is in the town center.
    Die Kirche steht im Stadtzentrum.
The river flows through the city.
    Der Fluss fließt durch die Stadt.
The bridge is very old.
    Die Brücke ist sehr alt.
Is there a bank near here?
    Gibt es hier in der Nähe eine Bank?
The hospital is on the other side of the street.
    Das Krankenhaus ist auf der anderen Straßenseite.
The post office is closed.
    Die Post ist geschlossen.
Our village has only one shop.
    Unser Dorf hat nur einen Laden.
The beach is crowded in August.
    Im August ist der Strand voll.
The playground is behind the school.
    Der Spielplatz ist hinter der Schule.
The library is my favorite place.
    Die Bibliothek ist mein Lieblingsort.
We sat in a small café.
    Wir haben in einem kleinen Café gesessen.
The airport is far from the city.
    Der Flughafen ist weit von der Stadt entfernt.
I grew up in a small town.
    Ich bin in einer kleinen Stadt aufgewachsen.
The streets in the old town are narrow.
    Die Straßen in der Altstadt sind eng.
The mountains are covered with snow.
    Die Berge sind mit Schnee bedeckt.
The lake is very deep.
    Der See ist sehr tief.
There are many bicycles in Amsterdam.
    In Amsterdam gibt es viele Fahrräder.
The zoo is open every day.
    Der Zoo ist jeden Tag geöffnet.
Our house has a big garden.
    Unser Haus hat einen großen Garten.
The castle stands on a hill.
    Das Schloss liegt auf einem Hügel.
How are you?
    Wie geht es dir?
I'm fine, thanks.
    Mir geht es gut, danke.
I have a headache.
    Ich habe Kopfschmerzen.
I'm going to the doctor tomorrow.
    Morgen gehe ich zum Arzt.
She has a cold.
    Sie ist erkältet.
Get well soon!
    Gute Besserung!
I slept badly.
    Ich habe schlecht geschlafen.
I'm very happy today.
    Ich bin heute sehr glücklich.
He is nervous before the exam.
    Er ist vor der Prüfung nervös.
Thank you for your help.
    Danke für deine Hilfe.
You're welcome.
    Gern geschehen.
Nice to meet you.
    Freut mich, dich kennenzulernen.
My name is Anna.
    Ich heiße Anna.
Where are you from?
    Woher kommst du?
I come from Canada.
    Ich komme aus Kanada.
Can you help me?
    Kannst du mir helfen?
I don't know.
    Ich weiß es nicht.
That sounds good.
    Das klingt gut.
I'm looking forward to the weekend.
    Ich freue mich auf das Wochenende.
Happy birthday!
    Alles Gute zum Geburtstag!
Please speak more slowly.
    Bitte sprich langsamer.
I didn't understand that.
    Das habe ich nicht verstanden.
Could you write that down?
    Könntest du das aufschreiben?
"""


def parse_hand(text: str) -> list[tuple[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    pairs = []
    for en, de in zip(lines[0::2], lines[1::2], strict=True):
        if en.startswith(" ") or not de.startswith("    "):
            raise SystemExit(f"HAND table out of step near: {en!r}")
        pairs.append((en.strip(), de.strip()))
    return pairs


# ---------------------------------------------------------------------------
# Grammar helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    en: str  # English, without article
    de: str  # German nominative (singular, or plural if g == "pl")
    g: str  # German gender/number: "m", "f", "n" or "pl"
    cats: tuple[str, ...] = ()
    en_pl: bool = False  # English noun is plural ("are", "these")
    de_dat: str = ""  # German dative form if it differs (dative plural -n)
    count: bool = True  # False for mass nouns ("data", "code")
    de_adj: str = ""  # fixed adjective stem that is always inflected


@dataclass(frozen=True)
class Adj:
    en: str
    de: str  # predicative form
    stem: str = ""  # stem for inflected forms if different (teuer -> teur)

    def inflect(self, ending: str) -> str:
        return (self.stem or self.de) + ending


DEF = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
THIS = {
    "nom": {"m": "dieser", "f": "diese", "n": "dieses", "pl": "diese"},
    "acc": {"m": "diesen", "f": "diese", "n": "dieses", "pl": "diese"},
    "dat": {"m": "diesem", "f": "dieser", "n": "diesem", "pl": "diesen"},
}
# endings of ein/kein/mein/unser...
EIN = {
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
# adjective endings
WEAK = {
    "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
MIXED = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
STRONG = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
POSS = {"my": "mein", "his": "sein", "her": "ihr", "our": "unser", "their": "ihr"}


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def a_or_an(word: str) -> str:
    w = word.lower()
    if w.startswith(("use", "usu", "uni", "eu", "one")):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def de_np(noun: Noun, case: str, det: str, adj: Adj | None = None) -> str:
    """German noun phrase.  det: def, this, a, no (kein), bare, or a POSS key."""
    g = noun.g
    word = noun.de_dat if (case == "dat" and noun.de_dat) else noun.de
    if det == "def":
        art, table = DEF[case][g], WEAK
    elif det == "this":
        art, table = THIS[case][g], WEAK
    elif det == "a" and g != "pl":
        art, table = "ein" + EIN[case][g], MIXED
    elif det == "no":
        art, table = "kein" + EIN[case][g], MIXED
    elif det in POSS:
        art, table = POSS[det] + EIN[case][g], MIXED
    else:  # "bare", or "a" with a plural noun
        art, table = "", STRONG
    words = [art] if art else []
    ending = table[case][g]
    if adj:
        words.append(adj.inflect(ending))
    if noun.de_adj:
        words.append(noun.de_adj + ending)
    words.append(word)
    return " ".join(words)


def en_np(noun: Noun, det: str, adj: Adj | None = None) -> str:
    words = ([adj.en] if adj else []) + [noun.en]
    if det == "def":
        art = "the"
    elif det == "this":
        art = "these" if noun.en_pl else "this"
    elif det in ("a", "no"):
        art = "" if (noun.en_pl or not noun.count) else a_or_an(words[0])
    elif det in POSS:
        art = det
    else:
        art = ""
    return " ".join(([art] if art else []) + words)


@dataclass(frozen=True)
class Subj:
    en: str
    de: str
    p: str  # "1sg", "3sg", "1pl" or "3pl"
    kind: str = "person"  # or "org"


SUBJECTS = [
    Subj("I", "ich", "1sg"),
    Subj("he", "er", "3sg"),
    Subj("she", "sie", "3sg"),
    Subj("we", "wir", "1pl"),
    Subj("they", "sie", "3pl"),
    Subj("my brother", "mein Bruder", "3sg"),
    Subj("my sister", "meine Schwester", "3sg"),
    Subj("my father", "mein Vater", "3sg"),
    Subj("my mother", "meine Mutter", "3sg"),
    Subj("my parents", "meine Eltern", "3pl"),
    Subj("my grandmother", "meine Großmutter", "3sg"),
    Subj("my uncle", "mein Onkel", "3sg"),
    Subj("my aunt", "meine Tante", "3sg"),
    Subj("my colleagues", "meine Kollegen", "3pl"),
    Subj("the children", "die Kinder", "3pl"),
    Subj("the students", "die Studenten", "3pl"),
    Subj("Anna", "Anna", "3sg"),
    Subj("Tom", "Tom", "3sg"),
    Subj("Lena", "Lena", "3sg"),
    Subj("Paul", "Paul", "3sg"),
    Subj("Maria", "Maria", "3sg"),
    Subj("David", "David", "3sg"),
    Subj("Sophie", "Sophie", "3sg"),
    Subj("Jonas", "Jonas", "3sg"),
    Subj("our team", "unser Team", "3sg", "org"),
    Subj("the company", "die Firma", "3sg", "org"),
    Subj("the university", "die Universität", "3sg", "org"),
]
PEOPLE = [s for s in SUBJECTS if s.kind == "person"]
ORG_CATS = {"device", "vehicle", "soft", "code", "model", "data", "file", "doc", "mail", "digital"}


def pick(rng: random.Random, seq, weights=None):
    if weights:
        return rng.choices(seq, weights=weights, k=1)[0]
    return rng.choice(seq)


def person(rng: random.Random, i_weight: float = 0.0) -> Subj:
    if i_weight and rng.random() < i_weight:
        return PEOPLE[0]
    return rng.choice(PEOPLE)


def form(forms: tuple[str, str, str], p: str) -> str:
    """forms = (1sg, 3sg, plural)."""
    return forms[0] if p == "1sg" else forms[1] if p == "3sg" else forms[2]


def en_pres(base: str, third: str, p: str) -> str:
    return third if p == "3sg" else base


BE_EN = {"1sg": "am", "3sg": "is", "1pl": "are", "3pl": "are"}
SEIN = ("bin", "ist", "sind")
HABEN = ("habe", "hat", "haben")


def en_do(p: str) -> str:
    return "does" if p == "3sg" else "do"


# ---------------------------------------------------------------------------
# Vocabulary for subject-verb-object templates
# ---------------------------------------------------------------------------

ADJ = {
    "new": Adj("new", "neu"),
    "old": Adj("old", "alt"),
    "expensive": Adj("expensive", "teuer", "teur"),
    "cheap": Adj("cheap", "billig"),
    "small": Adj("small", "klein"),
    "used": Adj("used", "gebraucht"),
    "black": Adj("black", "schwarz"),
    "red": Adj("red", "rot"),
    "blue": Adj("blue", "blau"),
    "electric": Adj("electric", "elektrisch"),
    "fresh": Adj("fresh", "frisch"),
    "big": Adj("big", "groß"),
    "large": Adj("large", "groß"),
    "delicious": Adj("delicious", "lecker"),
    "interesting": Adj("interesting", "interessant"),
    "thick": Adj("thick", "dick"),
    "german": Adj("German", "deutsch"),
    "long": Adj("long", "lang"),
    "short": Adj("short", "kurz"),
    "important": Adj("important", "wichtig"),
    "simple": Adj("simple", "einfach"),
    "free": Adj("free", "kostenlos"),
    "popular": Adj("popular", "beliebt"),
    "multilingual": Adj("multilingual", "mehrsprachig"),
    "warm": Adj("warm", "warm"),
    "clean": Adj("clean", "sauber"),
}

ADJ_BY_CAT = {
    "device": ["new", "old", "expensive", "cheap", "small", "used", "black"],
    "vehicle": ["new", "old", "used", "red", "expensive", "electric"],
    "food": ["fresh", "big", "small", "delicious"],
    "book": ["new", "old", "interesting", "thick", "german"],
    "doc": ["long", "short", "important", "new"],
    "code": ["new", "small", "simple"],
    "soft": ["new", "free", "popular"],
    "model": ["new", "small", "large", "multilingual"],
    "clothing": ["new", "warm", "red", "black", "blue", "old"],
    "file": ["new", "old", "large", "important"],
    "data": ["new", "old", "clean", "important"],
}

# per-noun adjective lists where the category default would sound odd
NOUN_ADJ = {
    "update": ["new"],
    "script": ["new", "short", "simple"],
    "function": ["new", "short", "simple"],
    "website": ["new", "simple", "small"],
    "database": ["new", "large", "free"],
    "poem": ["short", "long", "new"],
    "invitation": ["new", "important"],
    "router": ["new", "old", "cheap"],
    "watch": ["new", "old", "expensive", "cheap", "black", "small"],
    "browser": ["new", "free", "popular"],
    "newspaper": ["new", "old", "german"],
    "magazine": ["new", "old", "interesting", "german"],
}

OBJECTS = [
    Noun("computer", "Computer", "m", ("device",)),
    Noun("laptop", "Laptop", "m", ("device",)),
    Noun("phone", "Handy", "n", ("device",)),
    Noun("tablet", "Tablet", "n", ("device",)),
    Noun("printer", "Drucker", "m", ("device",)),
    Noun("keyboard", "Tastatur", "f", ("device",)),
    Noun("monitor", "Monitor", "m", ("device",)),
    Noun("camera", "Kamera", "f", ("device",)),
    Noun("router", "Router", "m", ("device",)),
    Noun("headphones", "Kopfhörer", "pl", ("device",), en_pl=True, de_dat="Kopfhörern"),
    Noun("watch", "Uhr", "f", ("device",)),
    Noun("car", "Auto", "n", ("vehicle",)),
    Noun("bike", "Fahrrad", "n", ("vehicle",)),
    Noun("scooter", "Roller", "m", ("vehicle",)),
    Noun("apple", "Apfel", "m", ("food",)),
    Noun("cake", "Kuchen", "m", ("food",)),
    Noun("sandwich", "Sandwich", "n", ("food",)),
    Noun("banana", "Banane", "f", ("food",)),
    Noun("pizza", "Pizza", "f", ("food",)),
    Noun("salad", "Salat", "m", ("food",)),
    Noun("pear", "Birne", "f", ("food",)),
    Noun("pretzel", "Brezel", "f", ("food",)),
    Noun("cookie", "Keks", "m", ("food",)),
    Noun("bread roll", "Brötchen", "n", ("food",)),
    Noun("tomatoes", "Tomaten", "pl", ("food",), en_pl=True),
    Noun("strawberries", "Erdbeeren", "pl", ("food",), en_pl=True),
    Noun("book", "Buch", "n", ("book",)),
    Noun("newspaper", "Zeitung", "f", ("book",)),
    Noun("magazine", "Zeitschrift", "f", ("book",)),
    Noun("novel", "Roman", "m", ("book",)),
    Noun("cookbook", "Kochbuch", "n", ("book",)),
    Noun("textbook", "Lehrbuch", "n", ("book",)),
    Noun("letter", "Brief", "m", ("doc", "mail")),
    Noun("email", "E-Mail", "f", ("doc", "mail", "digital")),
    Noun("message", "Nachricht", "f", ("doc", "mail", "digital")),
    Noun("report", "Bericht", "m", ("doc", "mail")),
    Noun("article", "Artikel", "m", ("doc",)),
    Noun("text", "Text", "m", ("doc",)),
    Noun("poem", "Gedicht", "n", ("doc",)),
    Noun("invitation", "Einladung", "f", ("doc", "mail")),
    Noun("program", "Programm", "n", ("code", "soft")),
    Noun("app", "App", "f", ("code", "soft")),
    Noun("script", "Skript", "n", ("code",)),
    Noun("function", "Funktion", "f", ("code",)),
    Noun("website", "Website", "f", ("code",)),
    Noun("browser", "Browser", "m", ("soft",)),
    Noun("update", "Update", "n", ("soft",)),
    Noun("database", "Datenbank", "f", ("soft",)),
    Noun("translation app", "Übersetzungs-App", "f", ("soft",)),
    Noun("model", "Modell", "n", ("model",)),
    Noun("neural network", "Netz", "n", ("model",), de_adj="neuronal"),
    Noun("translation model", "Übersetzungsmodell", "n", ("model",)),
    Noun("language model", "Sprachmodell", "n", ("model",)),
    Noun("classifier", "Klassifikator", "m", ("model",)),
    Noun("jacket", "Jacke", "f", ("clothing",)),
    Noun("shirt", "Hemd", "n", ("clothing",)),
    Noun("coat", "Mantel", "m", ("clothing",)),
    Noun("hat", "Hut", "m", ("clothing",)),
    Noun("dress", "Kleid", "n", ("clothing",)),
    Noun("sweater", "Pullover", "m", ("clothing",)),
    Noun("scarf", "Schal", "m", ("clothing",)),
    Noun("shoes", "Schuhe", "pl", ("clothing",), en_pl=True, de_dat="Schuhen"),
    Noun("file", "Datei", "f", ("file",)),
    Noun("document", "Dokument", "n", ("file",)),
    Noun("photo", "Foto", "n", ("file",)),
    Noun("presentation", "Präsentation", "f", ("file",)),
    Noun("spreadsheet", "Tabelle", "f", ("file",)),
    Noun("photos", "Fotos", "pl", ("file",), en_pl=True),
    Noun("data", "Daten", "pl", ("data",), count=False),
    Noun("dataset", "Datensatz", "m", ("data",)),
    Noun("training data", "Trainingsdaten", "pl", ("data",), count=False),
]


@dataclass(frozen=True)
class Verb:
    en: str
    en3: str
    ing: str  # "" for stative verbs (no progressive)
    past: str  # "" if not used in the past
    de: tuple[str, str, str]  # 1sg, 3sg, plural (= infinitive)
    part: str  # German past participle (aux haben), "" if not used
    cats: tuple[str, ...]
    org: bool  # may an organisation be the subject?
    poss: bool  # may the object have a possessive?
    neg: str  # "kein", "nicht" or ""


VERBS = [
    Verb(
        "buy",
        "buys",
        "buying",
        "bought",
        ("kaufe", "kauft", "kaufen"),
        "gekauft",
        ("device", "vehicle", "food", "book", "clothing"),
        True,
        False,
        "kein",
    ),
    Verb(
        "sell",
        "sells",
        "selling",
        "sold",
        ("verkaufe", "verkauft", "verkaufen"),
        "verkauft",
        ("device", "vehicle", "book"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "need",
        "needs",
        "",
        "",
        ("brauche", "braucht", "brauchen"),
        "",
        ("device", "vehicle", "clothing", "book", "soft"),
        True,
        True,
        "kein",
    ),
    Verb(
        "have",
        "has",
        "",
        "",
        ("habe", "hat", "haben"),
        "",
        ("device", "vehicle", "clothing", "book"),
        True,
        False,
        "kein",
    ),
    Verb(
        "read",
        "reads",
        "reading",
        "read",
        ("lese", "liest", "lesen"),
        "gelesen",
        ("book", "doc"),
        False,
        True,
        "nicht",
    ),
    Verb(
        "write",
        "writes",
        "writing",
        "wrote",
        ("schreibe", "schreibt", "schreiben"),
        "geschrieben",
        ("doc", "code"),
        True,
        False,
        "",
    ),
    Verb(
        "eat",
        "eats",
        "eating",
        "ate",
        ("esse", "isst", "essen"),
        "gegessen",
        ("food",),
        False,
        False,
        "",
    ),
    Verb(
        "use",
        "uses",
        "using",
        "used",
        ("benutze", "benutzt", "benutzen"),
        "benutzt",
        ("device", "soft", "model", "data"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "test",
        "tests",
        "testing",
        "tested",
        ("teste", "testet", "testen"),
        "getestet",
        ("soft", "code", "model"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "train",
        "trains",
        "training",
        "trained",
        ("trainiere", "trainiert", "trainieren"),
        "trainiert",
        ("model",),
        True,
        True,
        "",
    ),
    Verb(
        "install",
        "installs",
        "installing",
        "installed",
        ("installiere", "installiert", "installieren"),
        "installiert",
        ("soft",),
        True,
        False,
        "nicht",
    ),
    Verb(
        "repair",
        "repairs",
        "repairing",
        "repaired",
        ("repariere", "repariert", "reparieren"),
        "repariert",
        ("device", "vehicle"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "open",
        "opens",
        "opening",
        "opened",
        ("öffne", "öffnet", "öffnen"),
        "geöffnet",
        ("file", "mail"),
        False,
        True,
        "nicht",
    ),
    Verb(
        "save",
        "saves",
        "saving",
        "saved",
        ("speichere", "speichert", "speichern"),
        "gespeichert",
        ("file", "data"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "delete",
        "deletes",
        "deleting",
        "deleted",
        ("lösche", "löscht", "löschen"),
        "gelöscht",
        ("file", "data", "digital"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "send",
        "sends",
        "sending",
        "sent",
        ("schicke", "schickt", "schicken"),
        "geschickt",
        ("mail", "file"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "translate",
        "translates",
        "translating",
        "translated",
        ("übersetze", "übersetzt", "übersetzen"),
        "übersetzt",
        ("book", "doc"),
        True,
        True,
        "nicht",
    ),
    Verb(
        "wear",
        "wears",
        "wearing",
        "wore",
        ("trage", "trägt", "tragen"),
        "getragen",
        ("clothing",),
        False,
        False,
        "nicht",
    ),
    Verb(
        "analyze",
        "analyzes",
        "analyzing",
        "analyzed",
        ("analysiere", "analysiert", "analysieren"),
        "analysiert",
        ("data",),
        True,
        True,
        "",
    ),
    Verb(
        "collect",
        "collects",
        "collecting",
        "collected",
        ("sammle", "sammelt", "sammeln"),
        "gesammelt",
        ("data",),
        True,
        False,
        "",
    ),
]


@dataclass(frozen=True)
class SVO:
    s: Subj
    v: Verb
    noun: Noun
    det: str
    adj: Adj | None

    @property
    def en_obj(self) -> str:
        return en_np(self.noun, self.det, self.adj)

    @property
    def de_obj(self) -> str:
        return de_np(self.noun, "acc", self.det, self.adj)

    @property
    def de_verb(self) -> str:
        return form(self.v.de, self.s.p)

    def en_present(self, prog: bool) -> str:
        if prog and self.v.ing:
            return f"{self.s.en} {BE_EN[self.s.p]} {self.v.ing} {self.en_obj}"
        return f"{self.s.en} {en_pres(self.v.en, self.v.en3, self.s.p)} {self.en_obj}"


def pick_svo(rng: random.Random, need=None, dets=None) -> SVO:
    """Pick a semantically compatible subject, verb and object.

    need: predicate on the verb; dets: allowed determiners (default: all).
    """
    while True:
        v = rng.choice(VERBS)
        if need and not need(v):
            continue
        s = rng.choice(SUBJECTS)
        if s.kind == "org" and not v.org:
            continue
        if v.en == "wear" and s.p in ("1pl", "3pl"):  # "they wear a shirt" sounds odd
            continue
        cats = [c for c in v.cats if s.kind == "person" or c in ORG_CATS]
        nouns = [n for n in OBJECTS if set(n.cats) & set(cats)]
        if not nouns:
            continue
        noun = rng.choice(nouns)
        options = ["def", "def", "this"] + (["a", "a", "a"] if noun.count else ["bare", "bare"])
        if v.poss:
            options += ["our"] if s.kind == "org" else ["my", "our", "his", "her"]
        if dets:
            options = [d for d in options if d in dets]
            if not options:
                continue
        det = rng.choice(options)
        adj = None
        if rng.random() < (0.65 if det == "bare" else 0.5):
            adj = ADJ[rng.choice(NOUN_ADJ.get(noun.en) or ADJ_BY_CAT[noun.cats[0]])]
        return SVO(s, v, noun, det, adj)


# ---------------------------------------------------------------------------
# Templates.  Each returns one (English, German) pair.
# ---------------------------------------------------------------------------


def t_svo_present(rng):
    x = pick_svo(rng)
    prog = bool(x.v.ing) and rng.random() < 0.45
    en = x.en_present(prog)
    de = f"{x.s.de} {x.de_verb} {x.de_obj}"
    if prog and rng.random() < 0.4:
        en_adv, de_adv = rng.choice(
            [("right now", "gerade"), ("today", "heute"), ("at the moment", "gerade")]
        )
        en = f"{en} {en_adv}"
        de = f"{x.s.de} {x.de_verb} {de_adv} {x.de_obj}"
    return cap(en) + ".", cap(de) + "."


PAST_TIMES = [
    ("yesterday", "gestern"),
    ("last week", "letzte Woche"),
    ("this morning", "heute Morgen"),
    ("last year", "letztes Jahr"),
    ("on Saturday", "am Samstag"),
    ("last night", "gestern Abend"),
    ("two days ago", "vor zwei Tagen"),
    ("last month", "letzten Monat"),
]


def t_svo_perfect(rng):
    x = pick_svo(rng, need=lambda v: bool(v.part))
    t_en, t_de = rng.choice(PAST_TIMES)
    aux = form(HABEN, x.s.p)
    if rng.random() < 0.5:
        en = f"{t_en} {x.s.en} {x.v.past} {x.en_obj}"
        de = f"{t_de} {aux} {x.s.de} {x.de_obj} {x.v.part}"
    else:
        en = f"{x.s.en} {x.v.past} {x.en_obj} {t_en}"
        de = f"{x.s.de} {aux} {t_de} {x.de_obj} {x.v.part}"
    return cap(en) + ".", cap(de) + "."


MODALS = [
    # English (base, 3sg), German (1sg, 3sg, pl), English question form
    (("want to", "wants to"), ("will", "will", "wollen"), "want"),
    (("have to", "has to"), ("muss", "muss", "müssen"), "have"),
    (("can", "can"), ("kann", "kann", "können"), "can"),
    (("would like to", "would like to"), ("möchte", "möchte", "möchten"), "would"),
]


def no_modal(v: Verb) -> bool:
    return v.en not in ("need", "have")


def t_modal(rng):
    x = pick_svo(rng, need=no_modal)
    (en_b, en_3), de_forms, _ = rng.choice(MODALS)
    en = f"{x.s.en} {en_pres(en_b, en_3, x.s.p)} {x.v.en} {x.en_obj}"
    de = f"{x.s.de} {form(de_forms, x.s.p)} {x.de_obj} {x.v.de[2]}"
    return cap(en) + ".", cap(de) + "."


def t_negation(rng):
    if rng.random() < 0.5:
        x = pick_svo(rng, need=lambda v: v.neg == "kein", dets=("a",))
        if x.noun.count:
            en_obj = x.en_obj
        else:
            en_obj = "any " + en_np(x.noun, "bare", x.adj)
        en = f"{x.s.en} {en_do(x.s.p)}n't {x.v.en} {en_obj}"
        de = f"{x.s.de} {x.de_verb} {de_np(x.noun, 'acc', 'no', x.adj)}"
    else:
        x = pick_svo(
            rng, need=lambda v: v.neg == "nicht", dets=("def", "this", "my", "our", "his", "her")
        )
        en = f"{x.s.en} {en_do(x.s.p)}n't {x.v.en} {x.en_obj}"
        de = f"{x.s.de} {x.de_verb} {x.de_obj} nicht"
    return cap(en) + ".", cap(de) + "."


def t_question(rng):
    r = rng.random()
    x = pick_svo(rng)
    if r < 0.45:
        if x.v.ing and rng.random() < 0.4:
            en = f"{BE_EN[x.s.p]} {x.s.en} {x.v.ing} {x.en_obj}"
        else:
            en = f"{en_do(x.s.p)} {x.s.en} {x.v.en} {x.en_obj}"
        de = f"{x.de_verb} {x.s.de} {x.de_obj}"
    elif r < 0.7 and x.s.p != "1sg":
        en = f"why {en_do(x.s.p)} {x.s.en} {x.v.en} {x.en_obj}"
        de = f"warum {x.de_verb} {x.s.de} {x.de_obj}"
    elif not no_modal(x.v):
        return t_question(rng)
    else:
        _, de_forms, kind = rng.choice(MODALS if x.s.p != "1sg" else MODALS[1:3])
        if kind == "want":
            en = f"{en_do(x.s.p)} {x.s.en} want to {x.v.en} {x.en_obj}"
        elif kind == "have":
            en = f"{en_do(x.s.p)} {x.s.en} have to {x.v.en} {x.en_obj}"
        elif kind == "can":
            en = f"can {x.s.en} {x.v.en} {x.en_obj}"
        else:
            en = f"would {x.s.en} like to {x.v.en} {x.en_obj}"
        de = f"{form(de_forms, x.s.p)} {x.s.de} {x.de_obj} {x.v.de[2]}"
    return cap(en) + "?", cap(de) + "?"


MATRIX = [
    ("I think", "Ich glaube"),
    ("I know", "Ich weiß"),
    ("I hope", "Ich hoffe"),
    ("she says", "Sie sagt"),
    ("he thinks", "Er denkt"),
    ("we know", "Wir wissen"),
    ("it is true", "Es stimmt"),
    ("I am sure", "Ich bin sicher"),
    ("my mother says", "Meine Mutter sagt"),
    ("Tom thinks", "Tom glaubt"),
    ("it is good", "Es ist gut"),
    ("Anna says", "Anna sagt"),
]
MATRIX_OB = [
    ("I don't know", "Ich weiß nicht"),
    ("she asks", "Sie fragt"),
    ("we wonder", "Wir fragen uns"),
    ("I am not sure", "Ich bin nicht sicher"),
    ("nobody knows", "Niemand weiß"),
]


def t_subordinate(rng):
    if rng.random() < 0.75:
        m_en, m_de = rng.choice(MATRIX)
        conj_en, conj_de = "that", "dass"
    else:
        m_en, m_de = rng.choice(MATRIX_OB)
        conj_en, conj_de = "if", "ob"
    r = rng.random()
    if r < 0.45:
        x = pick_svo(rng)
        en_c = x.en_present(rng.random() < 0.4)
        de_c = f"{x.s.de} {x.de_obj} {x.de_verb}"
    elif r < 0.75:
        x = pick_svo(rng, need=lambda v: bool(v.part))
        en_c = f"{x.s.en} {x.v.past} {x.en_obj}"
        de_c = f"{x.s.de} {x.de_obj} {x.v.part} {form(HABEN, x.s.p)}"
    else:
        x = pick_svo(rng, need=no_modal)
        modals = MODALS if m_en != "I hope" else [m for m in MODALS if m[2] != "have"]
        (en_b, en_3), de_forms, _ = rng.choice(modals)
        en_c = f"{x.s.en} {en_pres(en_b, en_3, x.s.p)} {x.v.en} {x.en_obj}"
        de_c = f"{x.s.de} {x.de_obj} {x.v.de[2]} {form(de_forms, x.s.p)}"
    if x.s.en.lower() in m_en.lower():  # "my mother says that my mother ..."
        return t_subordinate(rng)
    en = f"{cap(m_en)} {conj_en} {en_c}."
    de = f"{m_de}, {conj_de} {de_c}."
    return en, de


# reason clauses: (English, German verb-final); actions: (English, subject, verb, rest)
BECAUSE = {
    "weather": (
        [
            ("it is raining", "es regnet"),
            ("it is snowing", "es schneit"),
            ("it is too cold", "es zu kalt ist"),
            ("it is very windy", "es sehr windig ist"),
            ("the weather is bad", "das Wetter schlecht ist"),
            ("a storm is coming", "ein Sturm kommt"),
        ],
        [
            ("we are staying at home", "wir", "bleiben", "zu Hause"),
            ("I am taking the bus", "ich", "nehme", "den Bus"),
            ("the children are playing inside", "die Kinder", "spielen", "drinnen"),
            ("the game is cancelled", "das Spiel", "fällt", "aus"),
            ("she is wearing a warm coat", "sie", "trägt", "einen warmen Mantel"),
            ("we are not going to the beach", "wir", "gehen", "nicht an den Strand"),
            ("my father is driving slowly", "mein Vater", "fährt", "langsam"),
        ],
    ),
    "net": (
        [
            ("the internet is slow", "das Internet langsam ist"),
            ("the server is down", "der Server ausgefallen ist"),
            ("the Wi-Fi is not working", "das WLAN nicht funktioniert"),
            ("the connection is unstable", "die Verbindung instabil ist"),
        ],
        [
            ("I cannot send the email", "ich", "kann", "die E-Mail nicht schicken"),
            ("the video is not loading", "das Video", "lädt", "nicht"),
            ("the website is not working", "die Website", "funktioniert", "nicht"),
            ("we have to wait", "wir", "müssen", "warten"),
            ("she is working offline today", "sie", "arbeitet", "heute offline"),
            ("the meeting is starting later", "das Meeting", "beginnt", "später"),
        ],
    ),
    "tired": (
        [
            ("I am tired", "ich müde bin"),
            ("I slept badly", "ich schlecht geschlafen habe"),
            ("I worked late yesterday", "ich gestern lange gearbeitet habe"),
        ],
        [
            ("I am going to bed early", "ich", "gehe", "früh ins Bett"),
            ("I am drinking a strong coffee", "ich", "trinke", "einen starken Kaffee"),
            ("I am staying at home today", "ich", "bleibe", "heute zu Hause"),
            ("I cannot concentrate", "ich", "kann", "mich nicht konzentrieren"),
        ],
    ),
    "late": (
        [
            ("the train is late", "der Zug Verspätung hat"),
            ("the bus is not coming", "der Bus nicht kommt"),
            ("there is a lot of traffic", "viel Verkehr ist"),
        ],
        [
            ("I am late for work", "ich", "komme", "zu spät zur Arbeit"),
            ("we are taking a taxi", "wir", "nehmen", "ein Taxi"),
            ("we are missing the start of the film", "wir", "verpassen", "den Anfang des Films"),
            ("my sister is walking to work", "meine Schwester", "geht", "zu Fuß zur Arbeit"),
        ],
    ),
    "model": (
        [
            ("the model is too large", "das Modell zu groß ist"),
            ("the data is incomplete", "die Daten unvollständig sind"),
            ("the training takes too long", "das Training zu lange dauert"),
            ("the GPU has too little memory", "die GPU zu wenig Speicher hat"),
        ],
        [
            ("we are training a smaller model", "wir", "trainieren", "ein kleineres Modell"),
            ("the results are not good", "die Ergebnisse", "sind", "nicht gut"),
            ("we need a new computer", "wir", "brauchen", "einen neuen Computer"),
            ("the translation is still bad", "die Übersetzung", "ist", "noch schlecht"),
            ("we are collecting more data", "wir", "sammeln", "mehr Daten"),
        ],
    ),
    "hungry": (
        [("I am hungry", "ich Hunger habe"), ("the fridge is empty", "der Kühlschrank leer ist")],
        [
            ("I am going to the supermarket", "ich", "gehe", "zum Supermarkt"),
            ("we are ordering a pizza", "wir", "bestellen", "eine Pizza"),
            ("I am making a sandwich", "ich", "mache", "mir ein Sandwich"),
        ],
    ),
}


def t_because(rng):
    reasons, actions = BECAUSE[rng.choice(list(BECAUSE))]
    r_en, r_de = rng.choice(reasons)
    a_en, subj, verb, rest = rng.choice(actions)
    if rng.random() < 0.6:
        return f"{cap(a_en)} because {r_en}.", f"{cap(subj)} {verb} {rest}, weil {r_de}."
    return f"Because {r_en}, {a_en}.", f"Weil {r_de}, {verb} {subj} {rest}."


# things one can love or like: (English, German accusative, "interested in" ok)
LOVED = [
    ("machine learning", "maschinelles Lernen", True),
    ("music", "Musik", True),
    ("coffee", "Kaffee", False),
    ("green tea", "grünen Tee", False),
    ("chocolate", "Schokolade", False),
    ("books", "Bücher", True),
    ("pizza", "Pizza", False),
    ("summer", "den Sommer", False),
    ("winter", "den Winter", False),
    ("the sea", "das Meer", False),
    ("the mountains", "die Berge", False),
    ("this city", "diese Stadt", False),
    ("this song", "dieses Lied", False),
    ("languages", "Sprachen", True),
    ("the German language", "die deutsche Sprache", True),
    ("mathematics", "Mathematik", True),
    ("computers", "Computer", True),
    ("old films", "alte Filme", True),
    ("Italian food", "italienisches Essen", False),
    ("fresh bread", "frisches Brot", False),
    ("cats", "Katzen", False),
    ("dogs", "Hunde", False),
    ("soccer", "Fußball", True),
    ("jazz", "Jazz", True),
    ("open-source software", "Open-Source-Software", True),
    ("programming", "das Programmieren", True),
    ("statistics", "Statistik", True),
    ("history", "Geschichte", True),
    ("art", "Kunst", True),
    ("politics", "Politik", True),
    ("technology", "Technik", True),
    ("artificial intelligence", "künstliche Intelligenz", True),
    ("machine translation", "maschinelle Übersetzung", True),
    ("data science", "Datenwissenschaft", True),
    ("good coffee", "guten Kaffee", False),
    ("the rain", "den Regen", False),
    ("old computers", "alte Computer", True),
]
REFL = {"1sg": "mich", "1pl": "uns", "3sg": "sich", "3pl": "sich"}
INTERESSIEREN = ("interessiere", "interessiert", "interessieren")


def t_love(rng):
    s = person(rng, i_weight=0.45)
    weights = [8 if o[0] == "machine learning" else 1 for o in LOVED]
    o_en, o_de, interest = pick(rng, LOVED, weights)
    r = rng.random()
    if r < 0.45:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {o_en}"
        de = f"{s.de} {form(('liebe', 'liebt', 'lieben'), s.p)} {o_de}"
    elif r < 0.65:
        en = f"{s.en} {en_pres('like', 'likes', s.p)} {o_en}"
        de = f"{s.de} {form(('mag', 'mag', 'mögen'), s.p)} {o_de}"
    elif r < 0.8:
        en = f"{s.en} really {en_pres('like', 'likes', s.p)} {o_en}"
        de = f"{s.de} {form(('mag', 'mag', 'mögen'), s.p)} {o_de} sehr"
    elif interest:
        en = f"{s.en} {BE_EN[s.p]} interested in {o_en}"
        de = f"{s.de} {form(INTERESSIEREN, s.p)} {REFL[s.p]} für {o_de}"
    else:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {o_en}"
        de = f"{s.de} {form(('liebe', 'liebt', 'lieben'), s.p)} {o_de}"
    return cap(en) + ".", cap(de) + "."


# hobbies: (English -ing form, German verb forms, rest)
HOBBIES = [
    ("reading", ("lese", "liest", "lesen"), ""),
    ("cooking", ("koche", "kocht", "kochen"), ""),
    ("swimming", ("schwimme", "schwimmt", "schwimmen"), ""),
    ("dancing", ("tanze", "tanzt", "tanzen"), ""),
    ("hiking", ("wandere", "wandert", "wandern"), ""),
    ("singing", ("singe", "singt", "singen"), ""),
    ("painting", ("male", "malt", "malen"), ""),
    ("traveling", ("reise", "reist", "reisen"), ""),
    ("programming", ("programmiere", "programmiert", "programmieren"), ""),
    ("baking", ("backe", "backt", "backen"), ""),
    ("playing chess", ("spiele", "spielt", "spielen"), "Schach"),
    ("playing the piano", ("spiele", "spielt", "spielen"), "Klavier"),
    ("playing soccer", ("spiele", "spielt", "spielen"), "Fußball"),
    ("playing video games", ("spiele", "spielt", "spielen"), "Videospiele"),
    ("cycling", ("fahre", "fährt", "fahren"), "Fahrrad"),
    ("taking photos", ("fotografiere", "fotografiert", "fotografieren"), ""),
    ("learning languages", ("lerne", "lernt", "lernen"), "Sprachen"),
    ("gardening", ("arbeite", "arbeitet", "arbeiten"), "im Garten"),
    ("running", ("laufe", "läuft", "laufen"), ""),
    ("writing", ("schreibe", "schreibt", "schreiben"), ""),
    ("working with computers", ("arbeite", "arbeitet", "arbeiten"), "mit Computern"),
    ("translating texts", ("übersetze", "übersetzt", "übersetzen"), "Texte"),
]


def t_hobby(rng):
    s = person(rng, i_weight=0.3)
    h_en, forms, rest = rng.choice(HOBBIES)
    verb = form(forms, s.p)
    r = rng.random()
    if r < 0.4:
        en = f"{s.en} {en_pres('like', 'likes', s.p)} {h_en}"
        adv = "gern"
    elif r < 0.7:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {h_en}"
        adv = "sehr gern"
    else:
        en = f"{s.en} {en_do(s.p)}n't like {h_en}"
        adv = "nicht gern"
    de = " ".join(w for w in (s.de, verb, adv, rest) if w)
    return cap(en) + ".", cap(de) + "."


# fields: English, German nom/acc, German dative, flags
FIELDS = [
    ("machine learning", "maschinelles Lernen", "maschinellem Lernen", "study big"),
    ("statistics", "Statistik", "Statistik", "study"),
    ("computer science", "Informatik", "Informatik", "study"),
    ("mathematics", "Mathematik", "Mathematik", "study"),
    ("linguistics", "Linguistik", "Linguistik", "study"),
    ("data analysis", "Datenanalyse", "Datenanalyse", "big"),
    ("artificial intelligence", "künstliche Intelligenz", "künstlicher Intelligenz", "big"),
    ("machine translation", "maschinelle Übersetzung", "maschineller Übersetzung", "big"),
    ("deep learning", "Deep Learning", "Deep Learning", "big"),
    (
        "natural language processing",
        "maschinelle Sprachverarbeitung",
        "maschineller Sprachverarbeitung",
        "big",
    ),
    ("programming", "das Programmieren", "dem Programmieren", ""),
]
FIELD_ADJ = [
    ("fascinating", "faszinierend"),
    ("important", "wichtig"),
    ("difficult", "schwierig"),
    ("useful", "nützlich"),
    ("exciting", "spannend"),
    ("not easy", "nicht einfach"),
    ("very popular", "sehr beliebt"),
    ("interesting", "interessant"),
    ("really exciting", "wirklich spannend"),
]


def t_field(rng):
    weights = [6 if f[0] == "machine learning" else 1 for f in FIELDS]
    f_en, f_de, f_dat, flags = pick(rng, FIELDS, weights)
    s = person(rng, i_weight=0.3)
    p = s.p
    k = rng.randrange(11)
    if k == 0 and "study" in flags:
        return cap(f"{s.en} {en_pres('study', 'studies', p)} {f_en}."), cap(
            f"{s.de} {form(('studiere', 'studiert', 'studieren'), p)} {f_de}."
        )
    if k == 1:
        return cap(f"{s.en} {BE_EN[p]} interested in {f_en}."), cap(
            f"{s.de} {form(INTERESSIEREN, p)} {REFL[p]} für {f_de}."
        )
    if k == 2:
        return cap(f"{s.en} {BE_EN[p]} reading a book about {f_en}."), cap(
            f"{s.de} {form(('lese', 'liest', 'lesen'), p)} ein Buch über {f_de}."
        )
    if k == 3:
        return cap(f"{s.en} {en_pres('have', 'has', p)} a lot of experience with {f_en}."), cap(
            f"{s.de} {form(HABEN, p)} viel Erfahrung mit {f_dat}."
        )
    if k == 4:
        return cap(f"{s.en} {en_pres('want', 'wants', p)} to learn more about {f_en}."), cap(
            f"{s.de} {form(('möchte', 'möchte', 'möchten'), p)} mehr über {f_de} lernen."
        )
    if k == 5:
        return cap(f"{s.en} {BE_EN[p]} giving a talk on {f_en} tomorrow."), cap(
            f"{s.de} {form(('halte', 'hält', 'halten'), p)} morgen einen Vortrag über {f_de}."
        )
    if k == 6:
        return cap(f"{s.en} {BE_EN[p]} writing an article about {f_en}."), cap(
            f"{s.de} {form(('schreibe', 'schreibt', 'schreiben'), p)} einen Artikel über {f_de}."
        )
    if k == 7:
        a_en, a_de = rng.choice(FIELD_ADJ)
        return cap(f"{f_en} is {a_en}."), cap(f"{f_de} ist {a_de}.")
    if k == 8:
        return (
            (cap(f"{f_en} is fun."), cap(f"{f_de} macht Spaß."))
            if rng.random() < 0.5
            else (cap(f"{f_en} is a lot of fun."), cap(f"{f_de} macht viel Spaß."))
        )
    if k == 9 and "big" in flags:
        if rng.random() < 0.5:
            return cap(f"{f_en} is changing the world."), cap(f"{f_de} verändert die Welt.")
        return f"Many companies use {f_en}.", f"Viele Firmen nutzen {f_de}."
    return (
        f"There is a course on {f_en} at our university.",
        f"An unserer Universität gibt es einen Kurs über {f_de}.",
    )


# predicate adjectives: en, de, en comparative, de comparative, gradable, "too" ok
PADJ = {
    "fast": ("fast", "schnell", "faster", "schneller", True, True),
    "slow": ("slow", "langsam", "slower", "langsamer", True, True),
    "large": ("large", "groß", "larger", "größer", True, True),
    "small": ("small", "klein", "smaller", "kleiner", True, True),
    "good": ("good", "gut", "better", "besser", True, False),
    "accurate": ("accurate", "genau", "more accurate", "genauer", True, False),
    "correct": ("correct", "korrekt", "", "", False, False),
    "wrong": ("wrong", "falsch", "", "", False, False),
    "new": ("new", "neu", "", "", False, False),
    "old": ("old", "alt", "", "", True, True),
    "expensive": ("expensive", "teuer", "more expensive", "teurer", True, True),
    "cheap": ("cheap", "billig", "cheaper", "billiger", True, False),
    "broken": ("broken", "kaputt", "", "", False, False),
    "loud": ("loud", "laut", "louder", "lauter", True, True),
    "light": ("light", "leicht", "lighter", "leichter", True, False),
    "heavy": ("heavy", "schwer", "heavier", "schwerer", True, True),
    "stable": ("stable", "stabil", "more stable", "stabiler", True, False),
    "secure": ("secure", "sicher", "more secure", "sicherer", True, False),
    "empty": ("empty", "leer", "", "", False, False),
    "full": ("full", "voll", "", "", False, False),
    "short": ("short", "kurz", "shorter", "kürzer", True, True),
    "long": ("long", "lang", "longer", "länger", True, True),
    "simple": ("simple", "einfach", "simpler", "einfacher", True, True),
    "free": ("free", "kostenlos", "", "", False, False),
    "useful": ("useful", "nützlich", "more useful", "nützlicher", True, False),
    "popular": ("popular", "beliebt", "more popular", "beliebter", True, False),
    "clean": ("clean", "sauber", "cleaner", "sauberer", True, False),
    "incomplete": ("incomplete", "unvollständig", "", "", False, False),
    "important": ("important", "wichtig", "", "", True, False),
    "fluent": ("fluent", "flüssig", "more fluent", "flüssiger", True, False),
    "ready": ("ready", "fertig", "", "", False, False),
    "public": ("public", "öffentlich", "", "", False, False),
    "modern": ("modern", "modern", "more modern", "moderner", True, False),
    "hot": ("hot", "heiß", "hotter", "heißer", True, True),
    "cold": ("cold", "kalt", "colder", "kälter", True, True),
    "strong": ("strong", "stark", "stronger", "stärker", True, True),
    "salty": ("salty", "salzig", "saltier", "salziger", True, True),
    "bright": ("bright", "hell", "brighter", "heller", True, True),
    "narrow": ("narrow", "eng", "narrower", "enger", True, True),
    "quiet": ("quiet", "ruhig", "quieter", "ruhiger", True, True),
    "beautiful": ("beautiful", "schön", "more beautiful", "schöner", True, False),
    "dark": ("dark", "dunkel", "darker", "dunkler", True, True),
    "delicious": ("delicious", "lecker", "", "", True, False),
}

# (noun, adjective keys, comparative template allowed)
PRED = [
    (
        Noun("model", "Modell", "n"),
        ["accurate", "fast", "slow", "large", "small", "good", "ready"],
        True,
    ),
    (
        Noun("translation", "Übersetzung", "f"),
        ["good", "correct", "wrong", "accurate", "fluent"],
        True,
    ),
    (
        Noun("data", "Daten", "pl", count=False),
        ["incomplete", "correct", "new", "clean", "important", "old"],
        True,
    ),
    (
        Noun("computer", "Computer", "m"),
        ["slow", "fast", "new", "old", "expensive", "broken", "loud"],
        True,
    ),
    (
        Noun("laptop", "Laptop", "m"),
        ["slow", "fast", "new", "old", "expensive", "broken", "light", "heavy"],
        True,
    ),
    (Noun("phone", "Handy", "n"), ["new", "old", "broken", "expensive", "cheap", "fast"], True),
    (Noun("website", "Website", "f"), ["slow", "new", "fast", "modern"], True),
    (Noun("internet connection", "Internetverbindung", "f"), ["slow", "fast", "stable"], True),
    (Noun("password", "Passwort", "n"), ["short", "wrong", "secure", "long"], True),
    (Noun("file", "Datei", "f"), ["large", "empty", "new", "old", "important"], False),
    (Noun("battery", "Akku", "m"), ["empty", "full", "new", "old"], False),
    (Noun("program", "Programm", "n"), ["slow", "fast", "new", "simple", "free"], True),
    (Noun("app", "App", "f"), ["free", "new", "slow", "useful", "popular"], True),
    (Noun("keyboard", "Tastatur", "f"), ["new", "old", "loud"], True),
    (Noun("server", "Server", "m"), ["slow", "fast", "new", "old"], True),
    (
        Noun("language model", "Sprachmodell", "n"),
        ["large", "small", "new", "good", "accurate"],
        True,
    ),
    (
        Noun("translation model", "Übersetzungsmodell", "n"),
        ["good", "fast", "accurate", "ready", "new"],
        True,
    ),
    (Noun("printer", "Drucker", "m"), ["broken", "new", "old", "loud"], True),
    (Noun("dataset", "Datensatz", "m"), ["large", "small", "new", "clean", "public"], True),
    (Noun("code", "Code", "m", count=False), ["correct", "wrong", "simple", "clean", "new"], True),
    (
        Noun("documentation", "Dokumentation", "f", count=False),
        ["good", "short", "long", "useful", "incomplete"],
        True,
    ),
    (Noun("screen", "Bildschirm", "m"), ["large", "small", "dark", "bright"], True),
    (
        Noun("headphones", "Kopfhörer", "pl", en_pl=True),
        ["new", "old", "expensive", "broken"],
        True,
    ),
    (Noun("coffee", "Kaffee", "m", count=False), ["hot", "cold", "strong", "good"], False),
    (Noun("soup", "Suppe", "f"), ["hot", "cold", "salty", "delicious"], False),
    (Noun("room", "Zimmer", "n"), ["small", "large", "bright", "clean", "quiet"], True),
    (
        Noun("apartment", "Wohnung", "f"),
        ["small", "large", "bright", "expensive", "cheap", "quiet"],
        True,
    ),
    (Noun("street", "Straße", "f"), ["long", "narrow", "quiet", "dark"], False),
    (Noun("city", "Stadt", "f"), ["large", "small", "beautiful", "quiet", "loud"], False),
    (Noun("water", "Wasser", "n", count=False), ["cold", "hot", "clean"], False),
]

INTENS = [
    ("", ""),
    ("very", "sehr"),
    ("really", "wirklich"),
    ("quite", "ziemlich"),
    ("not", "nicht"),
    ("too", "zu"),
]


def t_pred(rng):
    noun, keys, _ = rng.choice(PRED)
    a_en, a_de, _, _, gradable, too_ok = PADJ[rng.choice(keys)]
    det = rng.choice(["def", "def", "this", "my", "our", "her", "his"])
    if gradable:
        options = [i for i in INTENS if i[0] != "too" or too_ok]
    else:
        options = INTENS[:1] + [("not", "nicht")]
    i_en, i_de = rng.choice(options)
    past = rng.random() < 0.2
    pl_en, pl_de = noun.en_pl, noun.g == "pl"
    if past:
        be_en, be_de = ("were" if pl_en else "was"), ("waren" if pl_de else "war")
    else:
        be_en, be_de = ("are" if pl_en else "is"), ("sind" if pl_de else "ist")
    np_en, np_de = en_np(noun, det), de_np(noun, "nom", det)
    adj_en = f"{i_en} {a_en}".strip()
    adj_de = f"{i_de} {a_de}".strip()
    if rng.random() < 0.2 and i_en in ("", "very", "too"):
        return cap(f"{be_en} {np_en} {adj_en}?"), cap(f"{be_de} {np_de} {adj_de}?")
    return cap(f"{np_en} {be_en} {adj_en}."), cap(f"{np_de} {be_de} {adj_de}.")


def t_comparative(rng):
    noun, keys, ok = rng.choice(PRED)
    keys = [k for k in keys if PADJ[k][2]]
    if not ok or not keys:
        return t_pred(rng)
    _, _, c_en, c_de, _, _ = PADJ[rng.choice(keys)]
    new, old = ADJ["new"], ADJ["old"]
    pl_de = noun.g == "pl"
    be_en, be_de = ("are" if noun.en_pl else "is"), ("sind" if pl_de else "ist")
    if noun.en_pl:
        rest_en = "the old ones"
    elif not noun.count:
        rest_en = f"the old {noun.en}"
    else:
        rest_en = "the old one"
    rest_de = f"{DEF['nom'][noun.g]} {old.inflect(WEAK['nom'][noun.g])}"
    much_en, much_de = ("much ", "viel ") if rng.random() < 0.35 else ("", "")
    det = rng.choice(["def", "def", "our", "my"])
    np_en = en_np(noun, det, new)
    np_de = de_np(noun, "nom", det, new)
    return (
        cap(f"{np_en} {be_en} {much_en}{c_en} than {rest_en}."),
        cap(f"{np_de} {be_de} {much_de}{c_de} als {rest_de}."),
    )


# things that get lost at home
ITEMS = [
    Noun("keys", "Schlüssel", "pl", en_pl=True),
    Noun("phone", "Handy", "n"),
    Noun("laptop", "Laptop", "m"),
    Noun("glasses", "Brille", "f", en_pl=True),
    Noun("wallet", "Geldbörse", "f"),
    Noun("umbrella", "Regenschirm", "m"),
    Noun("charger", "Ladegerät", "n"),
    Noun("passport", "Reisepass", "m"),
    Noun("book", "Buch", "n"),
    Noun("jacket", "Jacke", "f"),
    Noun("headphones", "Kopfhörer", "pl", en_pl=True),
    Noun("tablet", "Tablet", "n"),
    Noun("notebook", "Notizbuch", "n"),
    Noun("bag", "Tasche", "f"),
    Noun("cat", "Katze", "f", ("animal",)),
    Noun("dog", "Hund", "m", ("animal",)),
]
LOCATIONS = [
    ("in the kitchen", "in der Küche", True),
    ("in the living room", "im Wohnzimmer", True),
    ("in the office", "im Büro", False),
    ("in the car", "im Auto", True),
    ("in the drawer", "in der Schublade", False),
    ("in the garden", "im Garten", True),
    ("in the bedroom", "im Schlafzimmer", True),
    ("in the hallway", "im Flur", True),
    ("on the table", "auf dem Tisch", False),
    ("on the desk", "auf dem Schreibtisch", False),
    ("on the sofa", "auf dem Sofa", True),
    ("under the bed", "unter dem Bett", True),
    ("next to the door", "neben der Tür", True),
    ("in my backpack", "in meinem Rucksack", False),
]


def t_where(rng):
    item = rng.choice(ITEMS)
    locs = [x for x in LOCATIONS if x[2]] if "animal" in item.cats else LOCATIONS
    if item.en == "bag":
        locs = [x for x in locs if "backpack" not in x[0] and "drawer" not in x[0]]
    l_en, l_de, _ = rng.choice(locs)
    det = rng.choice(["my", "my", "his", "her", "our", "def"])
    np_en, np_nom, np_acc = en_np(item, det), de_np(item, "nom", det), de_np(item, "acc", det)
    be_en = "are" if item.en_pl else "is"
    be_de = "sind" if item.g == "pl" else "ist"
    k = rng.randrange(7)
    if k == 0:
        return cap(f"{np_en} {be_en} {l_en}."), cap(f"{np_nom} {be_de} {l_de}.")
    if k == 1:
        return f"Where {be_en} {np_en}?", f"Wo {be_de} {np_nom}?"
    if k == 2:
        return cap(f"{be_en} {np_en} {l_en}?"), cap(f"{be_de} {np_nom} {l_de}?")
    if k == 3:
        return f"I think {np_en} {be_en} {l_en}.", f"Ich glaube, {np_nom} {be_de} {l_de}."
    if k == 4:
        return cap(f"{np_en} {be_en} not {l_en}."), cap(f"{np_nom} {be_de} nicht {l_de}.")
    if k == 5:
        return f"I can't find {np_en}.", f"Ich finde {np_acc} nicht."
    return f"Have you seen {np_en}?", f"Hast du {np_acc} gesehen?"


CITIES = [
    ("Berlin", "Berlin"),
    ("Hamburg", "Hamburg"),
    ("Munich", "München"),
    ("Vienna", "Wien"),
    ("Zurich", "Zürich"),
    ("Cologne", "Köln"),
    ("Frankfurt", "Frankfurt"),
    ("Leipzig", "Leipzig"),
    ("Dresden", "Dresden"),
    ("Bremen", "Bremen"),
    ("Stuttgart", "Stuttgart"),
    ("London", "London"),
    ("Paris", "Paris"),
    ("Rome", "Rom"),
    ("Prague", "Prag"),
    ("Lisbon", "Lissabon"),
    ("Madrid", "Madrid"),
    ("Amsterdam", "Amsterdam"),
    ("Copenhagen", "Kopenhagen"),
    ("Warsaw", "Warschau"),
    ("Athens", "Athen"),
    ("Stockholm", "Stockholm"),
    ("Brussels", "Brüssel"),
    ("Milan", "Mailand"),
    ("Venice", "Venedig"),
    ("Geneva", "Genf"),
    ("Tokyo", "Tokio"),
    ("New York", "New York"),
]

# family members: noun, male?, (min age, max age)
MEMBERS = [
    (Noun("brother", "Bruder", "m"), True, (4, 45)),
    (Noun("sister", "Schwester", "f"), False, (4, 45)),
    (Noun("father", "Vater", "m"), True, (35, 75)),
    (Noun("mother", "Mutter", "f"), False, (35, 75)),
    (Noun("son", "Sohn", "m"), True, (2, 30)),
    (Noun("daughter", "Tochter", "f"), False, (2, 30)),
    (Noun("grandmother", "Großmutter", "f"), False, (60, 95)),
    (Noun("grandfather", "Großvater", "m"), True, (60, 95)),
    (Noun("uncle", "Onkel", "m"), True, (30, 70)),
    (Noun("aunt", "Tante", "f"), False, (30, 70)),
    (Noun("nephew", "Neffe", "m"), True, (2, 25)),
    (Noun("niece", "Nichte", "f"), False, (2, 25)),
    (Noun("husband", "Mann", "m"), True, (25, 80)),
    (Noun("wife", "Frau", "f"), False, (25, 80)),
]
PROFESSIONS = [
    ("engineer", "Ingenieur", "Ingenieurin"),
    ("teacher", "Lehrer", "Lehrerin"),
    ("doctor", "Arzt", "Ärztin"),
    ("nurse", "Krankenpfleger", "Krankenpflegerin"),
    ("software developer", "Softwareentwickler", "Softwareentwicklerin"),
    ("cook", "Koch", "Köchin"),
    ("journalist", "Journalist", "Journalistin"),
    ("translator", "Übersetzer", "Übersetzerin"),
    ("lawyer", "Anwalt", "Anwältin"),
    ("pilot", "Pilot", "Pilotin"),
    ("architect", "Architekt", "Architektin"),
    ("baker", "Bäcker", "Bäckerin"),
    ("programmer", "Programmierer", "Programmiererin"),
    ("data scientist", "Datenwissenschaftler", "Datenwissenschaftlerin"),
    ("police officer", "Polizist", "Polizistin"),
    ("student", "Student", "Studentin"),
    ("mechanic", "Mechaniker", "Mechanikerin"),
    ("researcher", "Forscher", "Forscherin"),
    ("musician", "Musiker", "Musikerin"),
    ("farmer", "Landwirt", "Landwirtin"),
]
NUM = {
    2: ("two", "zwei"),
    3: ("three", "drei"),
    4: ("four", "vier"),
    5: ("five", "fünf"),
    6: ("six", "sechs"),
    7: ("seven", "sieben"),
    8: ("eight", "acht"),
    9: ("nine", "neun"),
    10: ("ten", "zehn"),
    11: ("eleven", "elf"),
    12: ("twelve", "zwölf"),
}


def t_family(rng):
    noun, male, (lo, hi) = rng.choice(MEMBERS)
    if noun.en == "husband":
        dets = ["my", "her"]
    elif noun.en == "wife":
        dets = ["my", "his"]
    else:
        dets = ["my", "my", "our", "his", "her"]
    det = rng.choice(dets)
    np_en, np_de = cap(en_np(noun, det)), cap(de_np(noun, "nom", det))
    p_en, p_m, p_f = rng.choice(PROFESSIONS)
    prof = p_m if male else p_f
    k = rng.randrange(6)
    if k == 0:
        return f"{np_en} is {a_or_an(p_en)} {p_en}.", f"{np_de} ist {prof}."
    if k == 1:
        return f"{np_en} works as {a_or_an(p_en)} {p_en}.", f"{np_de} arbeitet als {prof}."
    if k == 2:
        c_en, c_de = rng.choice(CITIES)
        return f"{np_en} lives in {c_en}.", f"{np_de} wohnt in {c_de}."
    if k == 3:
        age = rng.randint(lo, hi)
        a_en, a_de = NUM.get(age, (str(age), str(age)))
        return f"{np_en} is {a_en} years old.", f"{np_de} ist {a_de} Jahre alt."
    if k == 4:
        return f"{np_en} wants to become {a_or_an(p_en)} {p_en}.", f"{np_de} möchte {prof} werden."
    return f"{np_en} used to be {a_or_an(p_en)} {p_en}.", f"{np_de} war früher {prof}."


WEATHER_ADJ = [
    ("sunny", "sonnig"),
    ("cold", "kalt"),
    ("warm", "warm"),
    ("hot", "heiß"),
    ("windy", "windig"),
    ("cloudy", "bewölkt"),
    ("foggy", "neblig"),
    ("very cold", "sehr kalt"),
    ("quite warm", "ziemlich warm"),
]


def t_weather(rng):
    c_en, c_de = rng.choice(CITIES[:26])
    w_en, w_de = rng.choice(WEATHER_ADJ)
    k = rng.randrange(7)
    if k == 0:
        return f"It is {w_en} in {c_en} today.", f"Heute ist es in {c_de} {w_de}."
    if k == 1:
        return f"It will be {w_en} in {c_en} tomorrow.", f"Morgen wird es in {c_de} {w_de}."
    if k == 2:
        return f"It was {w_en} in {c_en} yesterday.", f"Gestern war es in {c_de} {w_de}."
    verb = rng.choice(
        [
            ("rain", "raining", "rained", "regnet", "regnen", "geregnet"),
            ("snow", "snowing", "snowed", "schneit", "schneien", "geschneit"),
        ]
    )
    if k == 3:
        return f"It is {verb[1]} in {c_en}.", f"In {c_de} {verb[3]} es."
    if k == 4:
        return f"It will {verb[0]} in {c_en} tomorrow.", f"Morgen wird es in {c_de} {verb[4]}."
    if k == 5:
        return f"It {verb[2]} in {c_en} yesterday.", f"Gestern hat es in {c_de} {verb[5]}."
    q_en, q_de = rng.choice(
        [("good", "gut"), ("bad", "schlecht"), ("nice", "schön"), ("terrible", "furchtbar")]
    )
    return f"The weather in {c_en} is {q_en} today.", f"Das Wetter in {c_de} ist heute {q_de}."


# destinations: English, German direction phrase, far away (plane only)?
DESTS = [(c_en, f"nach {c_de}", c_en in ("Tokyo", "New York")) for c_en, c_de in CITIES] + [
    ("Italy", "nach Italien", False),
    ("Spain", "nach Spanien", False),
    ("France", "nach Frankreich", False),
    ("Austria", "nach Österreich", False),
    ("Switzerland", "in die Schweiz", False),
    ("Turkey", "in die Türkei", False),
    ("the Netherlands", "in die Niederlande", False),
    ("the USA", "in die USA", True),
    ("Japan", "nach Japan", True),
    ("Denmark", "nach Dänemark", False),
    ("Greece", "nach Griechenland", False),
    ("Poland", "nach Polen", False),
]
NEAR = [
    ("the mountains", "in die Berge"),
    ("the sea", "ans Meer"),
    ("the lake", "an den See"),
    ("the countryside", "aufs Land"),
]
FUTURE_TIMES = [
    ("tomorrow", "morgen"),
    ("next week", "nächste Woche"),
    ("on Friday", "am Freitag"),
    ("in the summer", "im Sommer"),
    ("next month", "nächsten Monat"),
    ("on the weekend", "am Wochenende"),
    ("in August", "im August"),
]
PAST_TRIPS = [
    ("last year", "letztes Jahr"),
    ("last summer", "letzten Sommer"),
    ("in May", "im Mai"),
    ("two weeks ago", "vor zwei Wochen"),
    ("at Easter", "an Ostern"),
    ("last winter", "letzten Winter"),
]
MODES = [
    ("by train", "mit dem Zug"),
    ("by bus", "mit dem Bus"),
    ("by car", "mit dem Auto"),
    ("by plane", ""),
]


def t_travel(rng):
    s = person(rng)
    if rng.random() < 0.3:
        s = rng.choice([PEOPLE[3], PEOPLE[0]])  # more "we" and "I"
    if rng.random() < 0.2:
        d_en, d_de = rng.choice(NEAR)
        far = False
        modes = MODES[:3]
    else:
        d_en, d_de, far = rng.choice(DESTS)
        modes = MODES[3:] if far else MODES
    m_en, m_de = rng.choice(modes)
    plane = m_en == "by plane"
    k = rng.randrange(3)
    if k == 0:
        t_en, t_de = rng.choice(FUTURE_TIMES)
        if plane:
            en = f"{s.en} {BE_EN[s.p]} flying to {d_en} {t_en}"
            verb, mid = form(("fliege", "fliegt", "fliegen"), s.p), ""
        else:
            en = f"{s.en} {BE_EN[s.p]} going to {d_en} {m_en} {t_en}"
            verb, mid = form(("fahre", "fährt", "fahren"), s.p), f" {m_de}"
        if rng.random() < 0.5:
            de = f"{s.de} {verb} {t_de}{mid} {d_de}"
        else:
            de = f"{t_de} {verb} {s.de}{mid} {d_de}"
    elif k == 1:
        t_en, t_de = rng.choice(PAST_TRIPS)
        aux = form(SEIN, s.p)
        if plane:
            en = f"{s.en} flew to {d_en} {t_en}"
            part, mid = "geflogen", ""
        else:
            en = f"{s.en} went to {d_en} {m_en} {t_en}"
            part, mid = "gefahren", f" {m_de}"
        if rng.random() < 0.5:
            de = f"{s.de} {aux} {t_de}{mid} {d_de} {part}"
        else:
            de = f"{t_de} {aux} {s.de}{mid} {d_de} {part}"
    else:
        en = f"{s.en} {en_pres('want', 'wants', s.p)} to travel to {d_en}"
        de = f"{s.de} {form(('will', 'will', 'wollen'), s.p)} {d_de} reisen"
    return cap(en) + ".", cap(de) + "."


EVENTS = [
    Noun("meeting", "Meeting", "n"),
    Noun("film", "Film", "m"),
    Noun("concert", "Konzert", "n"),
    Noun("lesson", "Unterricht", "m"),
    Noun("course", "Kurs", "m"),
    Noun("game", "Spiel", "n"),
    Noun("party", "Party", "f"),
    Noun("lecture", "Vorlesung", "f"),
    Noun("workshop", "Workshop", "m"),
    Noun("exam", "Prüfung", "f"),
    Noun("conference", "Konferenz", "f"),
    Noun("play", "Theaterstück", "n"),
    Noun("tour", "Führung", "f"),
    Noun("training course", "Schulung", "f"),
]
VEHICLES = [
    Noun("train", "Zug", "m"),
    Noun("bus", "Bus", "m"),
    Noun("ferry", "Fähre", "f"),
    Noun("plane", "Flugzeug", "n"),
]
HOURS_EN = [
    "twelve",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
HOURS_DE = [
    "zwölf",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
]
DAYS = [
    ("Monday", "Montag"),
    ("Tuesday", "Dienstag"),
    ("Wednesday", "Mittwoch"),
    ("Thursday", "Donnerstag"),
    ("Friday", "Freitag"),
    ("Saturday", "Samstag"),
    ("Sunday", "Sonntag"),
]


def clock(rng) -> tuple[str, str]:
    h = rng.randint(1, 12)
    nxt = h % 12 + 1
    k = rng.randrange(5)
    if k == 0:
        return f"at {HOURS_EN[h]} o'clock", "um " + ("ein" if h == 1 else HOURS_DE[h]) + " Uhr"
    if k == 1:
        return f"at half past {HOURS_EN[h]}", f"um halb {HOURS_DE[nxt]}"
    if k == 2:
        return f"at a quarter past {HOURS_EN[h]}", f"um Viertel nach {HOURS_DE[h]}"
    if k == 3:
        return f"at a quarter to {HOURS_EN[nxt]}", f"um Viertel vor {HOURS_DE[nxt]}"
    h24 = rng.randint(8, 21)
    mm = rng.choice(["05", "10", "15", "20", "30", "40", "45", "50"])
    h12 = h24 - 12 if h24 > 12 else h24
    ampm = "p.m." if h24 >= 12 else "a.m."
    return f"at {h12}:{mm} {ampm}", f"um {h24}:{mm} Uhr"


def t_event(rng):
    t_en, t_de = clock(rng)
    if rng.random() < 0.3:
        noun = rng.choice(VEHICLES)
        det = rng.choice(["def", "our", "next"])
        if noun.en == "plane":
            v_en, v_en3, de_v, de_part = rng.choice(
                [("take off", "takes off", "startet", ""), ("land", "lands", "landet", "")]
            )
        else:
            v_en, v_en3, de_v, de_part = rng.choice(
                [("leave", "leaves", "fährt", "ab"), ("arrive", "arrives", "kommt", "an")]
            )
    else:
        noun = rng.choice(EVENTS)
        if noun.en in ("film", "game", "concert", "play", "tour"):
            det = rng.choice(["def", "def", "next"])
        else:
            det = rng.choice(["def", "def", "our", "my", "next"])
        v_en, v_en3, de_v, de_part = rng.choice(
            [("start", "starts", "beginnt", ""), ("end", "ends", "endet", "")]
        )
    if det == "next":
        np_en, np_de = (
            en_np(noun, "def", Adj("next", "nächst")),
            de_np(noun, "nom", "def", Adj("next", "nächst")),
        )
    else:
        np_en, np_de = en_np(noun, det), de_np(noun, "nom", det)
    tail = f" {de_part}" if de_part else ""
    k = rng.randrange(4)
    if k == 0:
        return cap(f"{np_en} {v_en3} {t_en}."), cap(f"{np_de} {de_v} {t_de}{tail}.")
    if k == 1:
        d_en, d_de = rng.choice(DAYS + [("tomorrow", "")])
        if d_de:
            return cap(f"{np_en} {v_en3} {t_en} on {d_en}."), cap(
                f"{np_de} {de_v} am {d_de} {t_de}{tail}."
            )
        return cap(f"{np_en} {v_en3} {t_en} tomorrow."), cap(f"{np_de} {de_v} morgen {t_de}{tail}.")
    if k == 2:
        return f"When does {np_en} {v_en}?", f"Wann {de_v} {np_de}{tail}?"
    return f"What time does {np_en} {v_en}?", f"Um wie viel Uhr {de_v} {np_de}{tail}?"


# weekly activities: English (base, 3sg), German verb forms, rest
ACTIVITIES = [
    (("go swimming", "goes swimming"), ("gehe", "geht", "gehen"), "schwimmen"),
    (("play soccer", "plays soccer"), ("spiele", "spielt", "spielen"), "Fußball"),
    (("go to the gym", "goes to the gym"), ("gehe", "geht", "gehen"), "ins Fitnessstudio"),
    (("work from home", "works from home"), ("arbeite", "arbeitet", "arbeiten"), "von zu Hause"),
    (("learn German", "learns German"), ("lerne", "lernt", "lernen"), "Deutsch"),
    (("go shopping", "goes shopping"), ("gehe", "geht", "gehen"), "einkaufen"),
    (
        ("cook for the whole family", "cooks for the whole family"),
        ("koche", "kocht", "kochen"),
        "für die ganze Familie",
    ),
    (("have a piano lesson", "has a piano lesson"), ("habe", "hat", "haben"), "Klavierunterricht"),
    (("go to the market", "goes to the market"), ("gehe", "geht", "gehen"), "auf den Markt"),
    (("clean the apartment", "cleans the apartment"), ("putze", "putzt", "putzen"), "die Wohnung"),
    (("go to the movies", "goes to the movies"), ("gehe", "geht", "gehen"), "ins Kino"),
    (("do yoga", "does yoga"), ("mache", "macht", "machen"), "Yoga"),
    (("sleep late", "sleeps late"), ("schlafe", "schläft", "schlafen"), "lange"),
    (("work late", "works late"), ("arbeite", "arbeitet", "arbeiten"), "lange"),
    (("go to the office", "goes to the office"), ("gehe", "geht", "gehen"), "ins Büro"),
    (
        ("take the train to work", "takes the train to work"),
        ("fahre", "fährt", "fahren"),
        "mit dem Zug zur Arbeit",
    ),
    (("go to the library", "goes to the library"), ("gehe", "geht", "gehen"), "in die Bibliothek"),
    (("bake bread", "bakes bread"), ("backe", "backt", "backen"), "Brot"),
    (("go running", "goes running"), ("gehe", "geht", "gehen"), "joggen"),
    (
        ("write code for fun", "writes code for fun"),
        ("schreibe", "schreibt", "schreiben"),
        "zum Spaß Code",
    ),
]


def t_days(rng):
    s = rng.choice([x for x in PEOPLE if x.en not in ("the children", "the students")])
    if rng.random() < 0.35:
        s = rng.choice([PEOPLE[0], PEOPLE[3]])
    (b, t), forms, rest = rng.choice(ACTIVITIES)
    d_en, d_de = rng.choice(DAYS)
    v_en = en_pres(b, t, s.p)
    verb = form(forms, s.p)
    k = rng.randrange(4)
    if k == 0:
        return f"On {d_en} {s.en} {v_en}.", f"Am {d_de} {verb} {s.de} {rest}."
    if k == 1:
        adv = d_de.lower() + "s"
        # "Ich gehe montags schwimmen": the adverb goes before the rest
        return cap(f"{s.en} {v_en} on {d_en}s."), cap(f"{s.de} {verb} {adv} {rest}.")
    if k == 2:
        return f"Every {d_en} {s.en} {v_en}.", f"Jeden {d_de} {verb} {s.de} {rest}."
    return f"On the weekend {s.en} {v_en}.", f"Am Wochenende {verb} {s.de} {rest}."


# priced items: noun, (min, max) euros, cents allowed?
PRICED = [
    (Noun("jacket", "Jacke", "f"), (40, 250), False),
    (Noun("shoes", "Schuhe", "pl", en_pl=True), (30, 180), False),
    (Noun("coffee", "Kaffee", "m"), (2, 5), True),
    (Noun("ticket", "Ticket", "n"), (3, 120), True),
    (Noun("book", "Buch", "n"), (8, 40), True),
    (Noun("laptop", "Laptop", "m"), (400, 2500), False),
    (Noun("phone", "Handy", "n"), (150, 1200), False),
    (Noun("bike", "Fahrrad", "n"), (200, 1500), False),
    (Noun("bread", "Brot", "n"), (2, 6), True),
    (Noun("umbrella", "Regenschirm", "m"), (8, 30), True),
    (Noun("headphones", "Kopfhörer", "pl", en_pl=True), (20, 300), False),
    (Noun("bag", "Tasche", "f"), (15, 120), False),
    (Noun("watch", "Uhr", "f"), (30, 500), False),
    (Noun("sweater", "Pullover", "m"), (25, 120), False),
    (Noun("dress", "Kleid", "n"), (30, 200), False),
    (Noun("lamp", "Lampe", "f"), (15, 150), False),
    (Noun("chair", "Stuhl", "m"), (20, 300), False),
    (Noun("sofa", "Sofa", "n"), (300, 2000), False),
    (Noun("keyboard", "Tastatur", "f"), (20, 150), False),
    (Noun("printer", "Drucker", "m"), (60, 400), False),
]


def price(rng, lo, hi, cents) -> tuple[str, str]:
    euros = rng.randint(lo, hi)
    if euros > 100:
        euros = euros // 50 * 50 - 1 if rng.random() < 0.3 else euros // 10 * 10
    if cents and rng.random() < 0.6:
        c = rng.choice(["20", "50", "80", "90", "99"])
        return f"{euros}.{c} euros", f"{euros},{c} Euro"
    return f"{euros} euros", f"{euros} Euro"


def t_price(rng):
    noun, (lo, hi), cents = rng.choice(PRICED)
    p_en, p_de = price(rng, lo, hi, cents)
    pl = noun.g == "pl"
    cost_en = "cost" if noun.en_pl else "costs"
    cost_de = "kosten" if pl else "kostet"
    k = rng.randrange(4)
    if k == 0:
        return cap(f"{en_np(noun, 'def')} {cost_en} {p_en}."), cap(
            f"{de_np(noun, 'nom', 'def')} {cost_de} {p_de}."
        )
    if k == 1:
        aux = "do" if noun.en_pl else "does"
        return (
            f"How much {aux} {en_np(noun, 'def')} cost?",
            f"Wie viel {cost_de} {de_np(noun, 'nom', 'def')}?",
        )
    if k == 2:
        return (
            cap(f"{en_np(noun, 'this')} {cost_en} only {p_en}."),
            cap(f"{de_np(noun, 'nom', 'this')} {cost_de} nur {p_de}."),
        )
    det = rng.choice(["my", "def", "this"])
    return (
        f"I paid {p_en} for {en_np(noun, det)}.",
        f"Ich habe {p_de} für {de_np(noun, 'acc', det)} bezahlt.",
    )


# languages: English, German noun, German adjective stem
LANGS = [
    ("English", "Englisch", "englisch"),
    ("German", "Deutsch", "deutsch"),
    ("French", "Französisch", "französisch"),
    ("Spanish", "Spanisch", "spanisch"),
    ("Italian", "Italienisch", "italienisch"),
    ("Dutch", "Niederländisch", "niederländisch"),
    ("Polish", "Polnisch", "polnisch"),
    ("Russian", "Russisch", "russisch"),
    ("Turkish", "Türkisch", "türkisch"),
    ("Japanese", "Japanisch", "japanisch"),
    ("Chinese", "Chinesisch", "chinesisch"),
    ("Portuguese", "Portugiesisch", "portugiesisch"),
    ("Arabic", "Arabisch", "arabisch"),
    ("Greek", "Griechisch", "griechisch"),
    ("Swedish", "Schwedisch", "schwedisch"),
]
LANG_ADJ = [
    ("beautiful", "schön"),
    ("difficult", "schwierig"),
    ("interesting", "interessant"),
    ("logical", "logisch"),
    ("useful", "nützlich"),
    ("melodic", "melodisch"),
]
TRANSLATORS = [
    ("the model", "das Modell"),
    ("this app", "diese App"),
    ("our system", "unser System"),
    ("the translation model", "das Übersetzungsmodell"),
    ("the new model", "das neue Modell"),
    ("the program", "das Programm"),
    ("my phone", "mein Handy"),
]
DOCS = [
    Noun("letter", "Brief", "m"),
    Noun("email", "E-Mail", "f"),
    Noun("article", "Artikel", "m"),
    Noun("book", "Buch", "n"),
    Noun("report", "Bericht", "m"),
    Noun("manual", "Handbuch", "n"),
    Noun("website", "Website", "f"),
    Noun("menu", "Speisekarte", "f"),
    Noun("contract", "Vertrag", "m"),
    Noun("text", "Text", "m"),
    Noun("documentation", "Dokumentation", "f"),
    Noun("subtitles", "Untertitel", "pl", en_pl=True),
]


def t_language(rng):
    l1, l2 = rng.sample(LANGS, 2)
    if rng.random() < 0.35:
        l1, l2 = LANGS[0], LANGS[1]  # English -> German is the common case here
    s = person(rng, i_weight=0.25)
    p = s.p
    k = rng.randrange(11)
    if k == 0:
        return cap(f"{s.en} {en_pres('speak', 'speaks', p)} {l1[0]} and {l2[0]}."), cap(
            f"{s.de} {form(('spreche', 'spricht', 'sprechen'), p)} {l1[1]} und {l2[1]}."
        )
    if k == 1:
        return cap(f"{s.en} {BE_EN[p]} learning {l2[0]}."), cap(
            f"{s.de} {form(('lerne', 'lernt', 'lernen'), p)} {l2[1]}."
        )
    if k == 2:
        return cap(f"{s.en} {en_pres('want', 'wants', p)} to learn {l2[0]}."), cap(
            f"{s.de} {form(('möchte', 'möchte', 'möchten'), p)} {l2[1]} lernen."
        )
    if k == 3:
        return cap(f"{s.en} {en_pres('speak', 'speaks', p)} {l1[0]} very well."), cap(
            f"{s.de} {form(('spreche', 'spricht', 'sprechen'), p)} sehr gut {l1[1]}."
        )
    if k == 4:
        a_en, a_de = rng.choice(LANG_ADJ)
        return f"{l2[0]} is {a_or_an(a_en)} {a_en} language.", f"{l2[1]} ist eine {a_de}e Sprache."
    if k == 5:
        return f"Is {l2[0]} difficult to learn?", f"Ist {l2[1]} schwer zu lernen?"
    if k == 6:
        t_en, t_de = rng.choice(TRANSLATORS)
        return cap(f"{t_en} translates from {l1[0]} into {l2[0]}."), cap(
            f"{t_de} übersetzt aus dem {cap(l1[2])}en ins {cap(l2[2])}e."
        )
    if k == 7:
        doc = rng.choice(DOCS)
        det = rng.choice(["def", "this", "my", "her", "his"])
        return cap(
            f"{s.en} {en_pres('translate', 'translates', p)} {en_np(doc, det)} "
            f"from {l1[0]} into {l2[0]}."
        ), cap(
            f"{s.de} {form(('übersetze', 'übersetzt', 'übersetzen'), p)} {de_np(doc, 'acc', det)} "
            f"aus dem {cap(l1[2])}en ins {cap(l2[2])}e."
        )
    if k == 8:
        if rng.random() < 0.5:
            return (
                f"We need a good translation into {l2[0]}.",
                f"Wir brauchen eine gute Übersetzung ins {cap(l2[2])}e.",
            )
        return (
            f"The translation into {l2[0]} is not finished yet.",
            f"Die Übersetzung ins {cap(l2[2])}e ist noch nicht fertig.",
        )
    if k == 9:
        det = rng.choice(["my", "his", "her", "our"])
        n = Noun("native language", "Muttersprache", "f")
        return cap(f"{en_np(n, det)} is {l1[0]}."), cap(f"{de_np(n, 'nom', det)} ist {l1[1]}.")
    a_en, a_de = rng.choice(
        [
            ("good", "gut"),
            ("correct", "korrekt"),
            ("not bad", "nicht schlecht"),
            ("too literal", "zu wörtlich"),
            ("surprisingly good", "überraschend gut"),
        ]
    )
    return (
        f"The translation from {l1[0]} into {l2[0]} is {a_en}.",
        f"Die Übersetzung aus dem {cap(l1[2])}en ins {cap(l2[2])}e ist {a_de}.",
    )


TEMPLATES = [
    (t_svo_present, 250),
    (t_svo_perfect, 150),
    (t_modal, 150),
    (t_negation, 90),
    (t_question, 100),
    (t_subordinate, 130),
    (t_because, 70),
    (t_love, 150),
    (t_hobby, 100),
    (t_field, 130),
    (t_pred, 130),
    (t_comparative, 60),
    (t_where, 100),
    (t_family, 110),
    (t_weather, 70),
    (t_travel, 90),
    (t_event, 70),
    (t_days, 80),
    (t_price, 60),
    (t_language, 120),
]


# ---------------------------------------------------------------------------
# Build and write
# ---------------------------------------------------------------------------


def clean(s: str) -> str:
    return " ".join(s.split())


def build() -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    pairs: list[tuple[str, str]] = []
    seen_en: set[str] = set()
    seen_de: set[str] = set()

    def add(en: str, de: str) -> bool:
        en, de = clean(en), clean(de)
        if en.casefold() in seen_en or de.casefold() in seen_de:
            return False
        seen_en.add(en.casefold())
        seen_de.add(de.casefold())
        pairs.append((en, de))
        return True

    hand = parse_hand(HAND)
    for en, de in hand:
        if not add(en, de):
            raise SystemExit(f"duplicate hand-written pair: {en}")
    for func, wanted in TEMPLATES:
        got = tries = 0
        while got < wanted and tries < wanted * 100:
            tries += 1
            if add(*func(rng)):
                got += 1
        if got < wanted:
            print(f"note: {func.__name__} gave {got} of {wanted} pairs")
    rng.shuffle(pairs)
    return pairs


def write(name: str, pairs: list[tuple[str, str]]) -> None:
    for lang, idx in (("en", 0), ("de", 1)):
        lines = [p[idx] for p in pairs]
        for line in lines:
            if not line or "\t" in line or "\n" in line:
                raise SystemExit(f"bad line: {line!r}")
        (OUT_DIR / f"{name}.{lang}").write_text(
            "\n".join(lines) + "\n", encoding="utf-8", newline="\n"
        )


def main() -> None:
    pairs = build()
    splits = {
        "test": pairs[:N_TEST],
        "val": pairs[N_TEST : N_TEST + N_VAL],
        "train": pairs[N_TEST + N_VAL :],
    }
    for name, part in splits.items():
        write(name, part)
        print(f"{name}: {len(part)} pairs")


if __name__ == "__main__":
    main()
